package scratchpad

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Entry is one file of a listing: its listing path (<member>/<path>) and size.
type Entry struct {
	Path string
	Size int64
}

// Read returns a file's bytes, whatever its size (SP-2.8 limits writes only). The caller's own
// file wins over the same path read as a listing path (SP-3.2). A read creates nothing (SP-3.6).
func (s *Store) Read(caller Caller, guestPath []byte) ([]byte, error) {
	if !s.mounted() {
		return nil, s.unmountedRefusal()
	}
	components, refusal := checkGuestPath(guestPath, s.config)
	if refusal != nil {
		return nil, refusal
	}
	names := NamesOf(caller)
	sawDirectory := false
	for _, candidate := range readCandidates(names, components) {
		found, err := probePath(s.root, candidate)
		if err != nil {
			return nil, err
		}
		switch found.kind {
		case nodeFile:
			return os.ReadFile(filepath.Join(s.root, filepath.Join(candidate...)))
		case nodeDirectory:
			sawDirectory = true
		}
	}
	if sawDirectory {
		return nil, refuse(IsADirectory, "%s is a directory; list it instead", string(guestPath))
	}
	return nil, refuse(NotFound, "no file %s in this session; list the session to see its files", string(guestPath))
}

// List lists the whole session (guestPath nil) or the files below one path, resolved as a read
// is: the first candidate that exists, own path first. Directories are not entries (SP-3.3).
func (s *Store) List(caller Caller, guestPath []byte) ([]Entry, error) {
	if !s.mounted() {
		return nil, s.unmountedRefusal()
	}
	names := NamesOf(caller)
	candidates := [][]string{{names.Session}}
	if guestPath != nil {
		components, refusal := checkGuestPath(guestPath, s.config)
		if refusal != nil {
			return nil, refusal
		}
		candidates = readCandidates(names, components)
	}
	for _, candidate := range candidates {
		found, err := probePath(s.root, candidate)
		if err != nil {
			return nil, err
		}
		listingPath := strings.Join(candidate[1:], "/")
		switch found.kind {
		case nodeFile:
			return []Entry{{Path: listingPath, Size: found.size}}, nil
		case nodeDirectory:
			files, err := walkFiles(filepath.Join(s.root, filepath.Join(candidate...)))
			if err != nil {
				return nil, err
			}
			entries := make([]Entry, 0, len(files))
			for _, file := range files {
				path := file.relative
				if listingPath != "" {
					path = listingPath + "/" + path
				}
				entries = append(entries, Entry{Path: path, Size: file.size})
			}
			return entries, nil
		}
	}
	if guestPath == nil {
		return []Entry{}, nil
	}
	return nil, refuse(NotFound, "nothing at %s in this session", string(guestPath))
}

// Remove removes one of the caller's own files, resolved as a write is (SP-3.4). The emptied
// directory stays; its time moves (SP-3.5, SP-3.6).
func (s *Store) Remove(caller Caller, guestPath []byte, now time.Time) error {
	if !s.mounted() {
		return s.unmountedRefusal()
	}
	components, refusal := checkGuestPath(guestPath, s.config)
	if refusal != nil {
		return refusal
	}
	names := NamesOf(caller)
	diskPath := append([]string{names.Session, names.Requester}, components...)
	found, err := probePath(s.root, diskPath)
	if err != nil {
		return err
	}
	switch found.kind {
	case nodeDirectory:
		return refuse(IsADirectory, "%s is a directory; remove its files one by one", string(guestPath))
	case nodeMissing, nodeCrossesFile, nodeOther:
		// Through a file is simply no file (SP-3.2): not_a_directory is a write's refusal only.
		return refuse(NotFound, "you have no file %s in this session", string(guestPath))
	}
	path := filepath.Join(s.root, filepath.Join(diskPath...))
	if err := os.Remove(path); err != nil {
		return err
	}
	s.account(names.Session, names.Requester+"/"+strings.Join(components, "/"), -found.size)
	return stampTimes([]string{filepath.Dir(path)}, now)
}

// readCandidates are the disk paths a read tries, in order (SP-3.2): the caller's own file,
// then the path as a session listing shows it.
func readCandidates(names Names, components []string) [][]string {
	own := append([]string{names.Session, names.Requester}, components...)
	listed := append([]string{names.Session}, components...)
	return [][]string{own, listed}
}
