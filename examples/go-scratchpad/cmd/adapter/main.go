// Command adapter gates the scratchpad package with the tidemark harness: it is the whole
// wiring between the store and the protocol (package tidemark does the pipe). A Go team gating
// its own store writes this file over its own types. Logs go to stderr; stdout is the protocol's.
package main

import (
	"errors"
	"log"
	"os"
	"time"

	"tidemark.example/go-scratchpad/scratchpad"
	"tidemark.example/go-scratchpad/tidemark"
)

// identity claims binary_content (the store keeps any bytes) and not sp12_digest (its names are
// its own).
var identity = tidemark.Identity{Implementation: "go-scratchpad 0.1.0", Capabilities: []string{"binary_content"}}

func main() {
	log.SetPrefix("go-scratchpad: ")
	if err := tidemark.Serve(os.Stdin, os.Stdout, &adapter{}, identity, log.Printf); err != nil {
		log.Fatal(err)
	}
}

type adapter struct{ store *scratchpad.Store }

func (a *adapter) Init(root string, knobs tidemark.Knobs) error {
	config := scratchpad.DefaultConfig()
	durations := map[string]*time.Duration{"thread_quiet_ms": &config.ThreadQuiet,
		"pairing_idle_ms": &config.PairingIdle, "sweep_interval_ms": &config.SweepInterval}
	sizes := map[string]*int64{"session_cap_bytes": &config.SessionCapBytes,
		"requester_ceiling_bytes": &config.RequesterCeilingBytes, "max_file_bytes": &config.MaxFileBytes}
	counts := map[string]*int{"max_depth": &config.MaxDepth, "max_path_bytes": &config.MaxPathBytes}
	for name, value := range knobs {
		if field, ok := durations[name]; ok {
			*field = time.Duration(value) * time.Millisecond
		} else if field, ok := sizes[name]; ok {
			*field = value
		} else if field, ok := counts[name]; ok {
			*field = int(value)
		} else {
			log.Printf("ignoring unknown knob %s", name)
		}
	}
	store, err := scratchpad.Open(root, config)
	a.store = store
	return err
}

func (a *adapter) Start(now time.Time) ([]string, error) { return a.store.Start(now) }
func (a *adapter) Tick(now time.Time) ([]string, error)  { return a.store.Tick(now) }

func (a *adapter) Names(caller tidemark.Caller) (string, string) {
	names := scratchpad.NamesOf(scratchpad.Caller(caller))
	return names.Session, names.Requester
}

func (a *adapter) Write(caller tidemark.Caller, path, content []byte, now time.Time) (tidemark.Written, error) {
	result, err := a.store.Write(scratchpad.Caller(caller), path, content, now)
	return tidemark.Written(result), protocolError(err)
}

func (a *adapter) Read(caller tidemark.Caller, path []byte, _ time.Time) ([]byte, error) {
	content, err := a.store.Read(scratchpad.Caller(caller), path)
	return content, protocolError(err)
}

func (a *adapter) List(caller tidemark.Caller, path []byte, _ time.Time) ([]tidemark.Entry, error) {
	entries, err := a.store.List(scratchpad.Caller(caller), path)
	listed := make([]tidemark.Entry, len(entries))
	for index, entry := range entries {
		listed[index] = tidemark.Entry(entry)
	}
	return listed, protocolError(err)
}

func (a *adapter) Remove(caller tidemark.Caller, path []byte, now time.Time) error {
	return protocolError(a.store.Remove(scratchpad.Caller(caller), path, now))
}

// protocolError turns the store's refusal into the protocol's; any other error stays a failure.
func protocolError(err error) error {
	var refusal *scratchpad.Refusal
	if errors.As(err, &refusal) {
		return &tidemark.Refusal{Reason: string(refusal.Reason), Message: refusal.Message}
	}
	return err
}
