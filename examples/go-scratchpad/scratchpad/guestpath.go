package scratchpad

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// checkGuestPath checks a guest path as bytes, in SP-6.2's order (empty, NUL, UTF-8, length,
// absolute, backslash, components left to right, depth), and returns its components. Nothing
// is repaired: a path that needs repair is refused.
func checkGuestPath(raw []byte, cfg Config) ([]string, *Refusal) {
	switch {
	case len(raw) == 0:
		return nil, refuse(EmptyPath, "the path is empty; name a file such as notes.md")
	case bytes.IndexByte(raw, 0) >= 0:
		return nil, refuse(NulByte, "the path contains a NUL byte")
	case !utf8.Valid(raw):
		return nil, refuse(NotUTF8, "the path is not valid UTF-8")
	case len(raw) > cfg.MaxPathBytes:
		return nil, refuse(PathTooLong, "the path is %d bytes; the limit is %d", len(raw), cfg.MaxPathBytes)
	case raw[0] == '/':
		return nil, refuse(AbsolutePath, "the path starts with '/'; paths are relative to your session")
	case bytes.IndexByte(raw, '\\') >= 0:
		return nil, refuse(Backslash, "the path contains a backslash; the separator is '/'")
	}
	components := strings.Split(string(raw), "/")
	for index, component := range components {
		switch component {
		case "..":
			return nil, refuse(Traversal, "component %d is '..'; paths never leave your session", index+1)
		case "", ".":
			return nil, refuse(NonCanonical, "component %d is %q; write each path one way, without empty or '.' components", index+1, component)
		}
	}
	if len(components) > cfg.MaxDepth {
		return nil, refuse(TooDeep, "the path has %d components; the limit is %d", len(components), cfg.MaxDepth)
	}
	return components, nil
}
