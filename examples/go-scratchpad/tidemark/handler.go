// Package tidemark speaks the tidemark/1 protocol (conformance/PROTOCOL.md) for a scratchpad
// implementation: it reads JSON lines, decodes hex paths and contents, calls a Handler with the
// handed-in time, and writes one answer per message. It knows nothing about storage; copy it
// into your project and implement Handler over your real code.
package tidemark

import (
	"fmt"
	"time"
)

// Caller is a call's context (SP-1.1). InThread is false outside a thread.
type Caller struct {
	Requester string
	Channel   string
	Thread    string
	InThread  bool
}

// Entry is one file of a listing: its listing path (<member-dir>/<path>) and its size.
type Entry struct {
	Path string
	Size int64
}

// Written is a write's result: the file's listing path and the listing paths the session cap
// evicted, oldest first.
type Written struct {
	Path    string
	Evicted []string
}

// Knobs are the profile's knobs as the harness sends them, by SPEC.md name (every one of
// them, SP-5.6): sizes in bytes, durations in milliseconds, counts as counts.
type Knobs map[string]int64

// Handler is a scratchpad under test. A method returns a *Refusal to say no; any other error
// is reported to the harness as an `error` message (a failure, not a refusal).
type Handler interface {
	// Init opens the store over root ("" is unmounted, SP-1.3). It is also called for the probe.
	Init(root string, knobs Knobs) error
	// Start is a process (re)start: sweep at once. It returns the session directories swept.
	Start(now time.Time) ([]string, error)
	// Tick is time moving: sweep if the interval has passed since the previous sweep.
	Tick(now time.Time) ([]string, error)
	// Names returns the caller's session and requester directory names (SP-1.2).
	Names(caller Caller) (session, requester string)
	Write(caller Caller, path, content []byte, now time.Time) (Written, error)
	Read(caller Caller, path []byte, now time.Time) ([]byte, error)
	// List lists the session (path nil) or below one path.
	List(caller Caller, path []byte, now time.Time) ([]Entry, error)
	Remove(caller Caller, path []byte, now time.Time) error
}

// Refusal is an ordinary "no" with a reason code of SPEC.md SP-6.1 and a message for a person.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return fmt.Sprintf("refused %s: %s", r.Reason, r.Message) }
