package scratchpad

import (
	"os"
	"path/filepath"
	"time"
)

// Start is a process (re)start: counts are rebuilt from disk and a sweep runs at once, before
// any timer (SP-5.5).
func (s *Store) Start(now time.Time) ([]string, error) {
	if err := s.rebuildUsage(); err != nil {
		return nil, err
	}
	return s.Sweep(now)
}

// Tick is time moving: a sweep runs when sweep_interval has passed since the previous sweep
// ran, counted from that sweep, never catching up on missed ones (SP-5.5).
func (s *Store) Tick(now time.Time) ([]string, error) {
	if s.sweptOnce && now.UnixMilli()-s.lastSweepMs < s.config.SweepInterval.Milliseconds() {
		return []string{}, nil
	}
	return s.Sweep(now)
}

// Sweep removes every expired session whole and returns their directory names, sorted. A
// session's age runs from its newest regular file, else from its own directory's time
// (SP-5.1, SP-5.3); the boundary is inclusive (SP-5.2). Unmounted, it does nothing.
func (s *Store) Sweep(now time.Time) ([]string, error) {
	s.lastSweepMs = now.UnixMilli()
	s.sweptOnce = true
	swept := []string{}
	if !s.mounted() {
		return swept, nil
	}
	sessions, err := s.sessionDirectories()
	if err != nil {
		return nil, err
	}
	for _, session := range sessions {
		dir := filepath.Join(s.root, session)
		newest, err := newestTime(dir)
		if err != nil {
			return swept, err
		}
		timer := s.config.PairingIdle
		if session[0] == 't' {
			timer = s.config.ThreadQuiet
		}
		if now.Sub(newest) < timer {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return swept, err
		}
		s.forgetSession(session)
		swept = append(swept, session)
	}
	if len(swept) > 0 {
		return swept, stampTimes([]string{s.root}, now)
	}
	return swept, nil
}

// newestTime is the modification time of the newest regular file below dir, or dir's own time
// when it holds none. Directory times below are skipped: removal moves them (SP-5.1).
func newestTime(dir string) (time.Time, error) {
	files, err := walkFiles(dir)
	if err != nil {
		return time.Time{}, err
	}
	if len(files) == 0 {
		info, err := os.Lstat(dir)
		if err != nil {
			return time.Time{}, err
		}
		return info.ModTime(), nil
	}
	newest := files[0].modified
	for _, file := range files[1:] {
		if file.modified.After(newest) {
			newest = file.modified
		}
	}
	return newest, nil
}
