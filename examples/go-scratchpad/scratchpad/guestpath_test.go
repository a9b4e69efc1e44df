package scratchpad

import (
	"strings"
	"testing"
)

func TestGuestPathRefusalsFollowTheSpecOrder(t *testing.T) {
	config := DefaultConfig()
	config.MaxDepth = 3
	config.MaxPathBytes = 20
	cases := []struct {
		path string
		want Reason
	}{
		{"", EmptyPath},
		{"/a\x00", NulByte},                          // NUL before absolute
		{"\xff/..", NotUTF8},                         // UTF-8 before traversal
		{"/" + strings.Repeat("a", 30), PathTooLong}, // length before absolute
		{"/etc/passwd", AbsolutePath},
		{"..\\x", Backslash},      // backslash before components
		{"./..", NonCanonical},    // the first bad component names the refusal
		{"../.", Traversal},       // left to right
		{"a/../b", Traversal},     // never normalised
		{"a//b", NonCanonical},    // empty component
		{"a/", NonCanonical},      // trailing slash
		{"a/b/c/d", TooDeep},      // depth after components
		{"a/b/../c/d", Traversal}, // components before depth
	}
	for _, c := range cases {
		_, refusal := checkGuestPath([]byte(c.path), config)
		if refusal == nil || refusal.Reason != c.want {
			t.Errorf("%q: got %v, want %s", c.path, refusal, c.want)
		}
	}
}

func TestCanonicalPathsAreAcceptedAsComponents(t *testing.T) {
	components, refusal := checkGuestPath([]byte("drafts/.hidden/n..otes.md"), DefaultConfig())
	if refusal != nil {
		t.Fatalf("refused a canonical path: %v", refusal)
	}
	if strings.Join(components, "|") != "drafts|.hidden|n..otes.md" {
		t.Fatalf("components %q", components)
	}
}
