package scratchpad

import "fmt"

// Reason is a refusal reason code of SP-6.1, spelled as the protocol spells it.
type Reason string

// The reason codes of SP-6.1.
const (
	Unmounted       Reason = "unmounted"
	EmptyPath       Reason = "empty_path"
	AbsolutePath    Reason = "absolute_path"
	NulByte         Reason = "nul_byte"
	NotUTF8         Reason = "not_utf8"
	Traversal       Reason = "traversal"
	NonCanonical    Reason = "non_canonical"
	Backslash       Reason = "backslash"
	TooDeep         Reason = "too_deep"
	PathTooLong     Reason = "path_too_long"
	SymlinkEscape   Reason = "symlink_escape"
	TooLarge        Reason = "too_large"
	CeilingExceeded Reason = "ceiling_exceeded"
	NotFound        Reason = "not_found"
	IsADirectory    Reason = "is_a_directory"
	NotADirectory   Reason = "not_a_directory"
)

// Refusal is how the store says no: an ordinary answer, not a failure. Any other error an
// operation returns is an I/O failure.
type Refusal struct {
	Reason  Reason
	Message string
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Reason, r.Message) }

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
