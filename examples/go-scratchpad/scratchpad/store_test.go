package scratchpad

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	epoch = time.UnixMilli(1767225600000)
	bob   = Caller{Requester: "bob", Channel: "general", Thread: "T1", InThread: true}
)

func at(minutes int) time.Time { return epoch.Add(time.Duration(minutes) * time.Minute) }

func openStore(t *testing.T, adjust func(*Config)) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	config := DefaultConfig()
	if adjust != nil {
		adjust(&config)
	}
	store, err := Open(root, config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Start(epoch); err != nil {
		t.Fatal(err)
	}
	return store, root
}

func mustWrite(t *testing.T, store *Store, caller Caller, path string, size int, now time.Time) WriteResult {
	t.Helper()
	result, err := store.Write(caller, []byte(path), []byte(strings.Repeat("x", size)), now)
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return result
}

func wantRefusal(t *testing.T, err error, want Reason) {
	t.Helper()
	var refusal *Refusal
	if !errors.As(err, &refusal) || refusal.Reason != want {
		t.Fatalf("got %v, want refusal %s", err, want)
	}
}

func listing(t *testing.T, store *Store, caller Caller) []string {
	t.Helper()
	entries, err := store.List(caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{}
	for _, entry := range entries {
		paths = append(paths, entry.Path)
	}
	return paths
}

func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var paths []string
	filepath.WalkDir(root, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		relative, _ := filepath.Rel(root, path)
		paths = append(paths, relative)
		return nil
	})
	return paths
}

func TestUnmountedRootRefusesEverythingAndCreatesNothing(t *testing.T) {
	workdir := t.TempDir()
	chdirForTest(t, workdir)
	missing := filepath.Join(t.TempDir(), "not-mounted")
	for _, root := range []string{"", missing} {
		store, err := Open(root, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.Write(alice, []byte("notes.md"), []byte("hi"), epoch)
		wantRefusal(t, err, Unmounted)
		_, err = store.Read(alice, []byte("notes.md"))
		wantRefusal(t, err, Unmounted)
		_, err = store.List(alice, nil)
		wantRefusal(t, err, Unmounted)
		wantRefusal(t, store.Remove(alice, []byte("notes.md"), epoch), Unmounted)
		if swept, err := store.Start(epoch); err != nil || len(swept) != 0 {
			t.Fatalf("unmounted sweep: %v %v", swept, err)
		}
	}
	if entries, _ := os.ReadDir(workdir); len(entries) != 0 {
		t.Fatalf("the working directory gained %v", entries)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing root was created: %v", err)
	}
}

func TestWriteLandsInCallersSubtreeEvenForAnotherMembersListingPath(t *testing.T) {
	store, root := openStore(t, nil)
	bobNames := NamesOf(bob)
	mustWrite(t, store, bob, "notes.md", 3, at(1))
	result := mustWrite(t, store, alice, bobNames.Requester+"/notes.md", 5, at(2))
	aliceNames := NamesOf(alice)
	want := aliceNames.Requester + "/" + bobNames.Requester + "/notes.md"
	if result.Path != want {
		t.Fatalf("written at %q, want %q", result.Path, want)
	}
	content, err := os.ReadFile(filepath.Join(root, aliceNames.Session, bobNames.Requester, "notes.md"))
	if err != nil || len(content) != 3 {
		t.Fatalf("bob's file changed: %q %v", content, err)
	}
}

func TestOwnPathWinsOverTheListingPath(t *testing.T) {
	store, _ := openStore(t, nil)
	bobDir := NamesOf(bob).Requester
	if _, err := store.Write(bob, []byte("notes.md"), []byte("bob's"), at(1)); err != nil {
		t.Fatal(err)
	}
	content, err := store.Read(alice, []byte(bobDir+"/notes.md"))
	if err != nil || string(content) != "bob's" {
		t.Fatalf("reading bob's listing path: %q %v", content, err)
	}
	if _, err := store.Write(alice, []byte(bobDir+"/notes.md"), []byte("alice's"), at(2)); err != nil {
		t.Fatal(err)
	}
	content, err = store.Read(alice, []byte(bobDir+"/notes.md"))
	if err != nil || string(content) != "alice's" {
		t.Fatalf("own path did not win: %q %v", content, err)
	}
}

func TestReadsListingsRemovalsAndRefusalsCreateNothing(t *testing.T) {
	store, root := openStore(t, nil)
	before := treeOf(t, root)
	_, err := store.Read(alice, []byte("notes.md"))
	wantRefusal(t, err, NotFound)
	if got := listing(t, store, alice); len(got) != 0 {
		t.Fatalf("an unwritten session lists %v", got)
	}
	_, err = store.List(alice, []byte("drafts"))
	wantRefusal(t, err, NotFound)
	wantRefusal(t, store.Remove(alice, []byte("notes.md"), epoch), NotFound)
	_, err = store.Write(alice, []byte("../x"), []byte("x"), epoch)
	wantRefusal(t, err, Traversal)
	if after := treeOf(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("the root changed from %v to %v", before, after)
	}
}

func TestOverwritingTheOldestFileUnderCapPressureNeverEvictsIt(t *testing.T) {
	// The bug issue 10 found in an earlier Go implementation: cap 1000, a.txt 500, b.txt 400,
	// then a.txt 700 must evict b.txt, keep a.txt and end at 700 bytes, never over the cap.
	store, _ := openStore(t, func(c *Config) { c.SessionCapBytes = 1000; c.MaxFileBytes = 1000 })
	mustWrite(t, store, alice, "a.txt", 500, at(1))
	mustWrite(t, store, alice, "b.txt", 400, at(2))
	result := mustWrite(t, store, alice, "a.txt", 700, at(3))
	own := NamesOf(alice).Requester
	if !reflect.DeepEqual(result.Evicted, []string{own + "/b.txt"}) {
		t.Fatalf("evicted %v, want only b.txt", result.Evicted)
	}
	if got := listing(t, store, alice); !reflect.DeepEqual(got, []string{own + "/a.txt"}) {
		t.Fatalf("listing %v", got)
	}
	if total := store.sessionBytes(NamesOf(alice).Session); total != 700 {
		t.Fatalf("session holds %d bytes, want 700", total)
	}
}

func TestEvictionIsOldestFirstWithEqualTimesByListingPath(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.SessionCapBytes = 1000; c.MaxFileBytes = 1000 })
	mustWrite(t, store, bob, "z.txt", 300, at(1))
	mustWrite(t, store, alice, "y.txt", 300, at(1))
	mustWrite(t, store, alice, "newer.txt", 300, at(2))
	result := mustWrite(t, store, alice, "big.txt", 700, at(3))
	aliceDir, bobDir := NamesOf(alice).Requester, NamesOf(bob).Requester
	// Equal times: the smaller listing path goes first, whichever member owns it.
	first, second := aliceDir+"/y.txt", bobDir+"/z.txt"
	if bobDir+"/z.txt" < aliceDir+"/y.txt" {
		first, second = second, first
	}
	if !reflect.DeepEqual(result.Evicted, []string{first, second}) {
		t.Fatalf("evicted %v, want %v then %v", result.Evicted, first, second)
	}
}

func TestEvictionNeverReachesAnotherSession(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.SessionCapBytes = 1000; c.MaxFileBytes = 1000 })
	aliceElsewhere := Caller{Requester: "alice", Channel: "general"}
	mustWrite(t, store, aliceElsewhere, "old.txt", 900, at(0))
	mustWrite(t, store, alice, "a.txt", 600, at(1))
	result := mustWrite(t, store, alice, "b.txt", 600, at(2))
	if len(result.Evicted) != 1 || !strings.HasSuffix(result.Evicted[0], "/a.txt") {
		t.Fatalf("evicted %v, want only this session's a.txt", result.Evicted)
	}
	if got := listing(t, store, aliceElsewhere); len(got) != 1 {
		t.Fatalf("the other session lost files: %v", got)
	}
}

func TestTheCeilingIsJudgedBeforeEvictionAndEvictsNothing(t *testing.T) {
	store, _ := openStore(t, func(c *Config) {
		c.SessionCapBytes, c.MaxFileBytes, c.RequesterCeilingBytes = 1000, 1000, 1500
	})
	mustWrite(t, store, Caller{Requester: "alice", Channel: "random"}, "elsewhere.txt", 800, at(0))
	mustWrite(t, store, alice, "old.txt", 600, at(1))
	// 800 + 600 + 600 = 2000 > 1500, although evicting old.txt would bring it to 1400.
	_, err := store.Write(alice, []byte("new.txt"), []byte(strings.Repeat("x", 600)), at(2))
	wantRefusal(t, err, CeilingExceeded)
	if got := listing(t, store, alice); len(got) != 1 {
		t.Fatalf("a refused write changed the session: %v", got)
	}
	// An overwrite counts its new size in place of the old one (SP-4.4): 800 + 700 fits.
	mustWrite(t, store, alice, "old.txt", 700, at(3))
}

func TestAWriteOntoADirectoryAtAFullCapEvictsNothing(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.SessionCapBytes = 1000; c.MaxFileBytes = 1000 })
	mustWrite(t, store, alice, "drafts/one.md", 900, at(1))
	_, err := store.Write(alice, []byte("drafts"), []byte(strings.Repeat("x", 500)), at(2))
	wantRefusal(t, err, IsADirectory)
	_, err = store.Write(alice, []byte("drafts/one.md/two.md"), []byte(strings.Repeat("x", 500)), at(2))
	wantRefusal(t, err, NotADirectory)
	if got := listing(t, store, alice); len(got) != 1 {
		t.Fatalf("a refused write evicted: %v", got)
	}
}

func TestAFileLargerThanTheCapIsRefusedBeforeAnyEviction(t *testing.T) {
	store, _ := openStore(t, func(c *Config) { c.SessionCapBytes = 1000; c.MaxFileBytes = 5000 })
	mustWrite(t, store, alice, "keep.txt", 100, at(1))
	_, err := store.Write(alice, []byte("huge.txt"), []byte(strings.Repeat("x", 1001)), at(2))
	wantRefusal(t, err, TooLarge)
	if got := listing(t, store, alice); len(got) != 1 {
		t.Fatalf("evicted for a file that could never fit: %v", got)
	}
}

func TestTheFileLimitIsAWriteLimitOnly(t *testing.T) {
	root := t.TempDir()
	store, _ := Open(root, DefaultConfig())
	if _, err := store.Write(alice, []byte("big.txt"), []byte(strings.Repeat("x", 2000)), epoch); err != nil {
		t.Fatal(err)
	}
	lowered := DefaultConfig()
	lowered.MaxFileBytes = 1000
	restarted, _ := Open(root, lowered)
	content, err := restarted.Read(alice, []byte("big.txt"))
	if err != nil || len(content) != 2000 {
		t.Fatalf("a stored file over a lowered limit is unreadable: %d bytes, %v", len(content), err)
	}
	_, err = restarted.Write(alice, []byte("big.txt"), content, epoch)
	wantRefusal(t, err, TooLarge)
}

func TestContentIsBytes(t *testing.T) {
	store, _ := openStore(t, nil)
	binary := []byte{0x00, 0xff, 0xfe, '\n', 0x80}
	if _, err := store.Write(alice, []byte("blob.bin"), binary, epoch); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Read(alice, []byte("blob.bin")); err != nil || !reflect.DeepEqual(got, binary) {
		t.Fatalf("read %v %v", got, err)
	}
}

func TestByteCountsAreRebuiltFromDiskAtRestart(t *testing.T) {
	root := t.TempDir()
	config := DefaultConfig()
	config.SessionCapBytes, config.MaxFileBytes = 1000, 1000
	store, _ := Open(root, config)
	mustWrite(t, store, alice, "a.txt", 600, at(1))
	restarted, _ := Open(root, config)
	if _, err := restarted.Start(at(2)); err != nil {
		t.Fatal(err)
	}
	result := mustWrite(t, restarted, alice, "b.txt", 600, at(3))
	if len(result.Evicted) != 1 {
		t.Fatalf("after a restart the cap forgot a.txt: evicted %v", result.Evicted)
	}
}

func TestSymbolicLinksAnywhereBelowTheRootAreRefused(t *testing.T) {
	store, root := openStore(t, nil)
	names := NamesOf(alice)
	mustWrite(t, store, alice, "real/notes.md", 3, epoch)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, names.Session, names.Requester, "link")); err != nil {
		t.Fatal(err)
	}
	_, err := store.Write(alice, []byte("link/x.md"), []byte("x"), epoch)
	wantRefusal(t, err, SymlinkEscape)
	_, err = store.Read(alice, []byte("link/x.md"))
	wantRefusal(t, err, SymlinkEscape)
	_, err = store.List(alice, []byte("link"))
	wantRefusal(t, err, SymlinkEscape)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("a write went through a link: %v", entries)
	}
	// The session listing skips links: they are not regular files.
	if got := listing(t, store, alice); !reflect.DeepEqual(got, []string{names.Requester + "/real/notes.md"}) {
		t.Fatalf("listing %v", got)
	}
}

func TestListingAPathListsBelowItOrTheOneFile(t *testing.T) {
	store, _ := openStore(t, nil)
	own := NamesOf(alice).Requester
	mustWrite(t, store, alice, "drafts/b.md", 2, epoch)
	mustWrite(t, store, alice, "drafts/a.md", 1, epoch)
	mustWrite(t, store, alice, "notes.md", 3, epoch)
	entries, err := store.List(alice, []byte("drafts"))
	if err != nil || !reflect.DeepEqual(entries, []Entry{{own + "/drafts/a.md", 1}, {own + "/drafts/b.md", 2}}) {
		t.Fatalf("listing drafts: %v %v", entries, err)
	}
	entries, err = store.List(bob, []byte(own+"/notes.md"))
	if err != nil || !reflect.DeepEqual(entries, []Entry{{own + "/notes.md", 3}}) {
		t.Fatalf("listing one file through its listing path: %v %v", entries, err)
	}
}

func TestTimesComeFromTheHandedInClock(t *testing.T) {
	store, root := openStore(t, nil)
	names := NamesOf(alice)
	mustWrite(t, store, alice, "drafts/one.md", 1, at(10))
	for _, path := range []string{names.Session, names.Session + "/" + names.Requester, names.Session + "/" + names.Requester + "/drafts", names.Session + "/" + names.Requester + "/drafts/one.md"} {
		info, err := os.Lstat(filepath.Join(root, path))
		if err != nil || !info.ModTime().Equal(at(10)) {
			t.Fatalf("%s: time %v, want the handed-in %v (%v)", path, info.ModTime(), at(10), err)
		}
	}
	if err := store.Remove(alice, []byte("drafts/one.md"), at(20)); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Lstat(filepath.Join(root, names.Session, names.Requester, "drafts"))
	if !info.ModTime().Equal(at(20)) {
		t.Fatalf("a removal left its directory's time at %v", info.ModTime())
	}
}

// chdirForTest is testing.T.Chdir for toolchains before Go 1.24.
func chdirForTest(t *testing.T, dir string) {
	t.Helper()
	previous, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(previous) })
}

func TestReadsAndRemovalsThroughAFileAreNotFoundButAWriteIsNotADirectory(t *testing.T) {
	// SP-3.2: a candidate whose parent crosses a file is simply not a file; only a write, which
	// would have to create the directory, is refused not_a_directory (SP-6.2).
	store, _ := openStore(t, nil)
	mustWrite(t, store, alice, "dir", 3, epoch)
	wantRefusal(t, store.Remove(alice, []byte("dir/c.txt"), epoch), NotFound)
	_, err := store.Read(alice, []byte("dir/c.txt"))
	wantRefusal(t, err, NotFound)
	_, err = store.Write(alice, []byte("dir/c.txt"), []byte("x"), epoch)
	wantRefusal(t, err, NotADirectory)
}

func TestAListingTakesTheFirstCandidateThatExistsOwnFirst(t *testing.T) {
	store, _ := openStore(t, nil)
	bobDir := NamesOf(bob).Requester
	mustWrite(t, store, bob, "notes.md", 3, epoch)
	// alice's own <bob-dir>/ holds a file of hers: her own directory wins over bob's listing path.
	mustWrite(t, store, alice, bobDir+"/mine.md", 1, epoch)
	entries, err := store.List(alice, []byte(bobDir))
	own := NamesOf(alice).Requester
	if err != nil || !reflect.DeepEqual(entries, []Entry{{own + "/" + bobDir + "/mine.md", 1}}) {
		t.Fatalf("listing %v %v", entries, err)
	}
}

func TestAnEmptyListingPathIsRefusedNotTheSessionRoot(t *testing.T) {
	store, _ := openStore(t, nil)
	mustWrite(t, store, alice, "notes.md", 1, epoch)
	_, err := store.List(alice, []byte{})
	wantRefusal(t, err, EmptyPath)
}
