// Package scratchpad is a session workspace on a local directory: one directory per session,
// one per requester inside it, the requester's files inside that (SPEC.md part SP).
//
// It never reads the wall clock: every operation that can change or judge a timestamp takes
// the current time from its caller, so a test (or the conformance harness) can move thirty
// days in a millisecond.
package scratchpad

import "time"

// Config holds every knob of SP-5.6. No knob is derived from another.
type Config struct {
	SessionCapBytes       int64
	RequesterCeilingBytes int64
	MaxFileBytes          int64
	ThreadQuiet           time.Duration
	PairingIdle           time.Duration
	SweepInterval         time.Duration
	MaxDepth              int
	MaxPathBytes          int
}

// DefaultConfig returns SPEC.md's defaults (SP-5.6).
func DefaultConfig() Config {
	return Config{
		SessionCapBytes:       1 << 20,
		RequesterCeilingBytes: 4 << 20,
		MaxFileBytes:          1 << 20,
		ThreadQuiet:           7 * 24 * time.Hour,
		PairingIdle:           time.Hour,
		SweepInterval:         5 * time.Minute,
		MaxDepth:              16,
		MaxPathBytes:          1024,
	}
}
