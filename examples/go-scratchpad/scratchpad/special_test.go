//go:build linux || darwin

package scratchpad

import (
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func TestASpecialFileIsNoFileToReadListRemoveOrReplace(t *testing.T) {
	// SP-3.2: a FIFO someone else placed is not a file: reads and removals are not_found,
	// listings skip it, and a write onto it is refused not_found rather than destroying it.
	store, root := openStore(t, nil)
	names := NamesOf(alice)
	mustWrite(t, store, alice, "notes.md", 1, epoch)
	fifo := filepath.Join(root, names.Session, names.Requester, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	_, err := store.Read(alice, []byte("pipe"))
	wantRefusal(t, err, NotFound)
	wantRefusal(t, store.Remove(alice, []byte("pipe"), epoch), NotFound)
	_, err = store.Write(alice, []byte("pipe"), []byte("x"), epoch)
	wantRefusal(t, err, NotFound)
	if got := listing(t, store, alice); !reflect.DeepEqual(got, []string{names.Requester + "/notes.md"}) {
		t.Fatalf("listing %v", got)
	}
}
