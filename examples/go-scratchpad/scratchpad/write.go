package scratchpad

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// WriteResult names the file written and every file the session cap evicted, oldest first
// (SP-4.3), all by listing path.
type WriteResult struct {
	Path    string
	Evicted []string
}

// Write stores content at the caller's path: always in the caller's own subtree (SP-3.1).
// Every check that can refuse runs before anything is evicted (SP-6.2).
func (s *Store) Write(caller Caller, guestPath, content []byte, now time.Time) (WriteResult, error) {
	if !s.mounted() {
		return WriteResult{}, s.unmountedRefusal()
	}
	components, refusal := checkGuestPath(guestPath, s.config)
	if refusal != nil {
		return WriteResult{}, refusal
	}
	size := int64(len(content))
	if size > s.config.MaxFileBytes {
		return WriteResult{}, refuse(TooLarge, "the file is %d bytes; the file limit is %d", size, s.config.MaxFileBytes)
	}
	if size > s.config.SessionCapBytes {
		return WriteResult{}, refuse(TooLarge, "the file is %d bytes; a session holds at most %d, so it could never fit", size, s.config.SessionCapBytes)
	}
	names := NamesOf(caller)
	diskPath := append([]string{names.Session, names.Requester}, components...)
	target, err := probePath(s.root, diskPath)
	if err != nil {
		return WriteResult{}, err
	}
	listingPath := names.Requester + "/" + strings.Join(components, "/")
	var oldSize int64
	switch target.kind {
	case nodeDirectory:
		return WriteResult{}, refuse(IsADirectory, "%s is a directory", string(guestPath))
	case nodeCrossesFile:
		return WriteResult{}, refuse(NotADirectory, "a parent of %s is a file", string(guestPath))
	case nodeOther:
		return WriteResult{}, refuse(NotFound, "%s is not a regular file", string(guestPath))
	case nodeFile:
		oldSize = target.size
	}
	// SP-4.4: an overwrite counts its new size in place of its old one. SP-4.1: the ceiling
	// is judged before any eviction.
	requesterAfter := s.requesterBytes[names.Requester] - oldSize + size
	if requesterAfter > s.config.RequesterCeilingBytes {
		return WriteResult{}, refuse(CeilingExceeded, "this write would bring your files across all sessions to %d bytes; your limit is %d; remove files you no longer need", requesterAfter, s.config.RequesterCeilingBytes)
	}
	evicted, err := s.evictFor(names.Session, listingPath, size-oldSize, now)
	if err != nil {
		return WriteResult{}, err
	}
	if err := s.store(diskPath, content, target.kind == nodeFile, now); err != nil {
		return WriteResult{}, err
	}
	s.account(names.Session, listingPath, size-oldSize)
	return WriteResult{Path: listingPath, Evicted: evicted}, nil
}

// evictFor removes the session's oldest files (by modification time, equal times by listing
// path) until growth fits under the cap (SP-4.2). The file being written is never a candidate.
func (s *Store) evictFor(session, targetListingPath string, growth int64, now time.Time) ([]string, error) {
	evicted := []string{}
	if s.sessionBytes(session)+growth <= s.config.SessionCapBytes {
		return evicted, nil
	}
	sessionDir := filepath.Join(s.root, session)
	files, err := walkFiles(sessionDir)
	if err != nil {
		return nil, err
	}
	var total int64
	candidates := files[:0]
	for _, file := range files {
		total += file.size
		if file.relative != targetListingPath {
			candidates = append(candidates, file)
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		if !candidates[i].modified.Equal(candidates[j].modified) {
			return candidates[i].modified.Before(candidates[j].modified)
		}
		return candidates[i].relative < candidates[j].relative
	})
	var touched []string
	for _, file := range candidates {
		if total+growth <= s.config.SessionCapBytes {
			break
		}
		path := filepath.Join(sessionDir, filepath.FromSlash(file.relative))
		if err := os.Remove(path); err != nil {
			return evicted, err
		}
		total -= file.size
		s.account(session, file.relative, -file.size)
		evicted = append(evicted, file.relative)
		touched = append(touched, filepath.Dir(path))
	}
	return evicted, stampTimes(touched, now)
}

// store creates missing parents and writes the file, then stamps everything it changed with now
// (SP-3.5): the file, each directory it created, and each directory that gained an entry.
func (s *Store) store(diskPath []string, content []byte, overwrite bool, now time.Time) error {
	var touched []string
	current := s.root
	for _, component := range diskPath[:len(diskPath)-1] {
		parent := current
		current = filepath.Join(current, component)
		err := os.Mkdir(current, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		touched = append(touched, parent, current)
	}
	path := filepath.Join(s.root, filepath.Join(diskPath...))
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return err
	}
	if !overwrite {
		touched = append(touched, current)
	}
	return stampTimes(append(touched, path), now)
}
