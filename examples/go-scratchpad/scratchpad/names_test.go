package scratchpad

import (
	"strings"
	"testing"
)

var alice = Caller{Requester: "alice", Channel: "general", Thread: "T1", InThread: true}

func TestNamesAreStableAndCarryTheKindPrefix(t *testing.T) {
	thread := NamesOf(alice)
	if again := NamesOf(alice); again != thread {
		t.Fatalf("names changed between calls: %v then %v", thread, again)
	}
	if !strings.HasPrefix(thread.Session, "t-") || !IsSessionName(thread.Session) {
		t.Fatalf("thread session name %q lacks the t- shape", thread.Session)
	}
	pairing := NamesOf(Caller{Requester: "alice", Channel: "general"})
	if !strings.HasPrefix(pairing.Session, "c-") || !IsSessionName(pairing.Session) {
		t.Fatalf("pairing session name %q lacks the c- shape", pairing.Session)
	}
	if pairing.Requester != thread.Requester {
		t.Fatalf("one requester got two directory names: %q and %q", thread.Requester, pairing.Requester)
	}
}

func TestNamesAreOwnFunctionNotTheSP12Digest(t *testing.T) {
	// SP-1.2's test vector: digest("requester", "alice") = 151d8375a7636540.
	if got := NamesOf(alice).Requester; strings.Contains(got, "151d8375a7636540") {
		t.Fatalf("requester name %q is SP-1.2's digest; this example must name its own way", got)
	}
}

func TestNamesAreOnePathSegment(t *testing.T) {
	names := NamesOf(Caller{Requester: "a/b", Channel: "..", Thread: "x\x00y", InThread: true})
	for _, name := range []string{names.Session, names.Requester} {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			t.Fatalf("name %q is not one path segment", name)
		}
	}
}

func TestNamesContainNoneOfTheirIdentifiersEvenOneLetterOnes(t *testing.T) {
	// A one-letter identifier is inside a random 20-letter name about half the time; the salt
	// search must find a name without it.
	for _, letter := range strings.Split("abcdefghijklmnopqrstuvwxyz234567", "") {
		caller := Caller{Requester: letter, Channel: letter + letter, Thread: letter, InThread: true}
		names := NamesOf(caller)
		if strings.Contains(names.Requester, letter) {
			t.Fatalf("requester name %q contains its identifier %q", names.Requester, letter)
		}
		if strings.Contains(strings.TrimPrefix(names.Session, "t-"), letter) {
			t.Fatalf("session name %q contains identifier %q", names.Session, letter)
		}
	}
}

func TestDistinctSessionsAndRequestersGetDistinctNames(t *testing.T) {
	callers := []Caller{
		{Requester: "alice", Channel: "general", Thread: "T1", InThread: true},
		{Requester: "alice", Channel: "general", Thread: "T2", InThread: true},
		{Requester: "alice", Channel: "general"},
		{Requester: "bob", Channel: "general"},
		// Identifiers that concatenate alike must not collide: parts are length-prefixed.
		{Requester: "c", Channel: "ab", Thread: "c", InThread: true},
		{Requester: "c", Channel: "a", Thread: "bc", InThread: true},
		// A thread and a pairing over the same strings are different sessions.
		{Requester: "T1", Channel: "general"},
	}
	seen := map[string]Caller{}
	for _, caller := range callers {
		session := NamesOf(caller).Session
		if other, taken := seen[session]; taken {
			t.Fatalf("%+v and %+v share session name %q", other, caller, session)
		}
		seen[session] = caller
	}
	if NamesOf(callers[0]).Requester == NamesOf(callers[3]).Requester {
		t.Fatal("alice and bob share a requester name")
	}
}

func TestThreadMembersShareOneSession(t *testing.T) {
	bob := alice
	bob.Requester = "bob"
	if NamesOf(alice).Session != NamesOf(bob).Session {
		t.Fatal("two members of one thread got two sessions (SP-1.1)")
	}
	aliceAlone, bobAlone := alice, bob
	aliceAlone.InThread, bobAlone.InThread = false, false
	if NamesOf(aliceAlone).Session == NamesOf(bobAlone).Session {
		t.Fatal("two users outside a thread share a session (SP-1.1)")
	}
}
