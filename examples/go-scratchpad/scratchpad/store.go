package scratchpad

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Store is a scratchpad over one root directory. It is not safe for concurrent use: the
// protocol sends one request at a time.
type Store struct {
	root   string
	config Config
	// usage holds the bytes below each session directory, by member directory ("" for files
	// directly in the session directory), so quota checks never walk (SP-4.5). Rebuilt from
	// disk by Start.
	usage map[string]map[string]int64
	// requesterBytes is each requester directory's total across all sessions (SP-4.1).
	requesterBytes map[string]int64
	// lastSweepMs is when the previous sweep ran; sweptOnce is false until the first one.
	lastSweepMs int64
	sweptOnce   bool
}

// Open makes a store over root. An empty root, or one that is not an existing directory, is
// unmounted (SP-1.3): every operation is refused and nothing is created. Open rebuilds the byte
// counts from disk.
func Open(root string, config Config) (*Store, error) {
	store := &Store{root: root, config: config}
	if err := store.rebuildUsage(); err != nil {
		return nil, err
	}
	return store, nil
}

// mounted is checked on every operation, never by resolving the empty path to ".".
func (s *Store) mounted() bool {
	if s.root == "" {
		return false
	}
	info, err := os.Stat(s.root)
	return err == nil && info.IsDir()
}

func (s *Store) unmountedRefusal() *Refusal {
	if s.root == "" {
		return refuse(Unmounted, "no scratch root is configured")
	}
	return refuse(Unmounted, "the scratch root is not mounted (not an existing directory)")
}

// rebuildUsage walks every session directory once, so counts are right after a restart.
func (s *Store) rebuildUsage() error {
	s.usage = map[string]map[string]int64{}
	s.requesterBytes = map[string]int64{}
	if !s.mounted() {
		return nil
	}
	sessions, err := s.sessionDirectories()
	if err != nil {
		return err
	}
	for _, session := range sessions {
		files, err := walkFiles(filepath.Join(s.root, session))
		if err != nil {
			return err
		}
		for _, file := range files {
			s.account(session, file.relative, file.size)
		}
	}
	return nil
}

// sessionDirectories lists the directories under the root this scheme wrote, sorted by name.
// Links, files and other directories are left alone (SP-5.4).
func (s *Store) sessionDirectories() ([]string, error) {
	entries, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, entry := range entries {
		if entry.IsDir() && entry.Type()&fs.ModeSymlink == 0 && IsSessionName(entry.Name()) {
			names = append(names, entry.Name())
		}
	}
	return names, nil
}

// account adds delta bytes for a file at a listing path of a session.
func (s *Store) account(session, listingPath string, delta int64) {
	member := memberOf(listingPath)
	members := s.usage[session]
	if members == nil {
		members = map[string]int64{}
		s.usage[session] = members
	}
	members[member] += delta
	if member != "" {
		s.requesterBytes[member] += delta
	}
}

// forgetSession drops a removed session's bytes from every member's total.
func (s *Store) forgetSession(session string) {
	for member, bytes := range s.usage[session] {
		if member != "" {
			s.requesterBytes[member] -= bytes
		}
	}
	delete(s.usage, session)
}

func (s *Store) sessionBytes(session string) int64 {
	var total int64
	for _, bytes := range s.usage[session] {
		total += bytes
	}
	return total
}

// memberOf is the member directory of a listing path, or "" for a file directly in the session.
func memberOf(listingPath string) string {
	for index := 0; index < len(listingPath); index++ {
		if listingPath[index] == '/' {
			return listingPath[:index]
		}
	}
	return ""
}
