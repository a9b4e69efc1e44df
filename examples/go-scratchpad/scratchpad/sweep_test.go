package scratchpad

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestASessionExpiresAtTheInclusiveBoundaryFromItsNewestFile(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.PairingIdle = time.Hour })
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "old.txt", 1, at(0))
	mustWrite(t, store, pairing, "new.txt", 1, at(30))
	if swept, _ := store.Sweep(at(89)); len(swept) != 0 {
		t.Fatalf("swept %v a minute before the newest file is an hour old", swept)
	}
	swept, err := store.Sweep(at(90))
	if err != nil || !reflect.DeepEqual(swept, []string{NamesOf(pairing).Session}) {
		t.Fatalf("at exactly an hour idle: swept %v %v", swept, err)
	}
}

func TestTheKindPrefixChoosesTheTimer(t *testing.T) {
	store, _ := openStore(t, nil)
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "p.txt", 1, at(0))
	mustWrite(t, store, alice, "t.txt", 1, at(0))
	swept, _ := store.Sweep(at(60))
	if !reflect.DeepEqual(swept, []string{NamesOf(pairing).Session}) {
		t.Fatalf("after an hour swept %v, want only the pairing", swept)
	}
	swept, _ = store.Sweep(epoch.Add(7 * 24 * time.Hour))
	if !reflect.DeepEqual(swept, []string{NamesOf(alice).Session}) {
		t.Fatalf("after seven days swept %v, want the thread", swept)
	}
}

func TestDirectoryTimesDoNotKeepASessionAlive(t *testing.T) {
	store, _ := openStore(t, nil)
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "keep.txt", 1, at(0))
	mustWrite(t, store, pairing, "drafts/gone.txt", 1, at(0))
	// Removing a file moves its directory's time to minute 50; the newest file is still at 0.
	if err := store.Remove(pairing, []byte("drafts/gone.txt"), at(50)); err != nil {
		t.Fatal(err)
	}
	if swept, _ := store.Sweep(at(60)); len(swept) != 1 {
		t.Fatalf("a removal kept the session alive: swept %v", swept)
	}
}

func TestAnEmptySessionFallsBackToItsOwnDirectoryTime(t *testing.T) {
	store, root := openStore(t, nil)
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "only.txt", 1, at(0))
	if err := store.Remove(pairing, []byte("only.txt"), at(30)); err != nil {
		t.Fatal(err)
	}
	// The session directory itself was last stamped when it was created, at minute 0.
	if swept, _ := store.Sweep(at(59)); len(swept) != 0 {
		t.Fatalf("swept early: %v", swept)
	}
	if swept, _ := store.Sweep(at(60)); len(swept) != 1 {
		t.Fatalf("an empty session never expired: %v", swept)
	}
	if _, err := os.Stat(filepath.Join(root, NamesOf(pairing).Session)); !os.IsNotExist(err) {
		t.Fatalf("the swept session directory is still there: %v", err)
	}
}

func TestTheSweeperLeavesAloneWhatThisSchemeDidNotName(t *testing.T) {
	store, root := openStore(t, nil)
	old := epoch.Add(-30 * 24 * time.Hour)
	// An operator's directory, one in SP-1.2's digest shape (not this scheme's), a file, and a
	// link shaped like one of our names.
	ours := NamesOf(Caller{Requester: "zed", Channel: "x"}).Session
	for _, dir := range []string{"t-not-a-session", "c-0123456789abcdef"} {
		os.Mkdir(filepath.Join(root, dir), 0o755)
		os.Chtimes(filepath.Join(root, dir), old, old)
	}
	os.WriteFile(filepath.Join(root, "t-file"), nil, 0o644)
	os.Symlink(t.TempDir(), filepath.Join(root, ours))
	if swept, err := store.Sweep(epoch); err != nil || len(swept) != 0 {
		t.Fatalf("swept %v %v", swept, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 4 {
		t.Fatalf("the root lost entries: %v", entries)
	}
}

func TestTickSweepsAnIntervalAfterThePreviousSweepNeverCatchingUp(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.SweepInterval = 5 * time.Minute; c.PairingIdle = time.Minute })
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "a.txt", 1, at(0)) // openStore's start swept at minute 0
	if swept, _ := store.Tick(at(4)); len(swept) != 0 {
		t.Fatalf("swept before the interval: %v", swept)
	}
	if swept, _ := store.Tick(at(5)); len(swept) != 1 {
		t.Fatalf("no sweep at the interval: %v", swept)
	}
	// A pause of an hour: one sweep at the first tick, the next due five minutes after it.
	mustWrite(t, store, pairing, "b.txt", 1, at(64))
	if swept, _ := store.Tick(at(65)); len(swept) != 1 {
		t.Fatalf("no sweep after the pause: %v", swept)
	}
	mustWrite(t, store, pairing, "c.txt", 1, at(65))
	if swept, _ := store.Tick(at(69)); len(swept) != 0 {
		t.Fatalf("a sweep caught up on missed ones: %v", swept)
	}
	if swept, _ := store.Tick(at(70)); len(swept) != 1 {
		t.Fatalf("no sweep five minutes after the previous: %v", swept)
	}
}

func TestStartSweepsAtOnceAndRestartsTheInterval(t *testing.T) {
	root := t.TempDir()
	store, _ := Open(root, DefaultConfig())
	pairing := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, pairing, "a.txt", 1, at(0))
	restarted, _ := Open(root, DefaultConfig())
	swept, err := restarted.Start(at(600))
	if err != nil || len(swept) != 1 {
		t.Fatalf("the startup sweep after an outage swept %v %v", swept, err)
	}
	if restarted.requesterBytes[NamesOf(pairing).Requester] != 0 {
		t.Fatalf("a swept session's bytes still count against its requester")
	}
}
