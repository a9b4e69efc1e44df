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

// nodeKind is what a path below the root is, found without following any link.
type nodeKind int

const (
	nodeMissing     nodeKind = iota
	nodeFile                 // a regular file
	nodeDirectory            // a directory
	nodeCrossesFile          // a component before the last is not a directory
	nodeOther                // a device, socket or pipe: never ours
)

// probe is what lies at a path below the root.
type probe struct {
	kind nodeKind
	size int64
}

// probePath walks the components below the root one by one with Lstat, so a symbolic link at
// any component is found (SP-2.7) and never followed. It stops at the first missing component
// or the first one that is not a directory: nothing can exist below it.
func probePath(root string, components []string) (probe, error) {
	current := root
	for index, component := range components {
		current = filepath.Join(current, component)
		info, err := os.Lstat(current)
		if errors.Is(err, fs.ErrNotExist) {
			return probe{kind: nodeMissing}, nil
		}
		if err != nil {
			return probe{}, err
		}
		mode := info.Mode()
		if mode&fs.ModeSymlink != 0 {
			return probe{}, refuse(SymlinkEscape, "%s is a symbolic link; links are never followed", strings.Join(components[:index+1], "/"))
		}
		last := index == len(components)-1
		switch {
		case mode.IsDir() && last:
			return probe{kind: nodeDirectory}, nil
		case mode.IsDir():
			continue
		case !last:
			return probe{kind: nodeCrossesFile}, nil
		case mode.IsRegular():
			return probe{kind: nodeFile, size: info.Size()}, nil
		default:
			return probe{kind: nodeOther}, nil
		}
	}
	return probe{kind: nodeDirectory}, nil
}

// storedFile is one regular file found by a walk, named by its path relative to the directory
// walked (with '/').
type storedFile struct {
	relative string
	size     int64
	modified time.Time
}

// walkFiles lists the regular files below dir, never following a link, sorted by path.
func walkFiles(dir string) ([]storedFile, error) {
	var files []storedFile
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !entry.Type().IsRegular() {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, storedFile{relative: filepath.ToSlash(relative), size: info.Size(), modified: info.ModTime()})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Slice(files, func(i, j int) bool { return files[i].relative < files[j].relative })
	return files, err
}

// stampTimes sets each path's times to now (SP-3.5): the operating system stamped them with
// its own clock when it changed them, and only the handed-in clock may decide retention.
func stampTimes(paths []string, now time.Time) error {
	for _, path := range paths {
		if err := os.Chtimes(path, now, now); err != nil {
			return err
		}
	}
	return nil
}
