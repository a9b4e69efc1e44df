package tidemark

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// recorder is a Handler that records what the protocol handed it.
type recorder struct {
	callers []Caller
	paths   [][]byte
	nows    []time.Time
	fail    error
}

func (r *recorder) Init(string, Knobs) error                       { return nil }
func (r *recorder) Start(time.Time) ([]string, error)              { return nil, nil }
func (r *recorder) Tick(time.Time) ([]string, error)               { return nil, r.fail }
func (r *recorder) Names(Caller) (string, string)                  { return "t-x", "y" }
func (r *recorder) Read(Caller, []byte, time.Time) ([]byte, error) { return nil, r.fail }
func (r *recorder) Remove(Caller, []byte, time.Time) error         { return r.fail }
func (r *recorder) Write(caller Caller, path, _ []byte, now time.Time) (Written, error) {
	return Written{Path: "y/" + string(path)}, r.fail
}
func (r *recorder) List(caller Caller, path []byte, now time.Time) ([]Entry, error) {
	r.callers, r.paths, r.nows = append(r.callers, caller), append(r.paths, path), append(r.nows, now)
	return nil, r.fail
}

func serveLines(t *testing.T, handler Handler, lines ...string) []map[string]any {
	t.Helper()
	var output bytes.Buffer
	if err := Serve(strings.NewReader(strings.Join(lines, "\n")), &output, handler, Identity{}, t.Logf); err != nil {
		t.Fatal(err)
	}
	var answers []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(output.String()), "\n") {
		var answer map[string]any
		if err := json.Unmarshal([]byte(line), &answer); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		answers = append(answers, answer)
	}
	return answers
}

const initLine = `{"type":"init","id":0,"protocol":"tidemark/1","profile":"scratchpad","root":"/r","knobs":{"max_depth":3}}`

func TestARequestBeforeInitIsAnErrorNotACrash(t *testing.T) {
	answers := serveLines(t, &recorder{}, `{"type":"request","id":4,"now_ms":0,"body":{"op":"start"}}`)
	if answers[0]["type"] != "error" || answers[0]["in_reply_to"] != float64(4) {
		t.Fatalf("answered %v", answers[0])
	}
}

func TestBlankLinesAreIgnoredAndTheLastLineNeedsNoNewline(t *testing.T) {
	answers := serveLines(t, &recorder{}, "", initLine, "", `{"type":"request","id":1,"now_ms":0,"body":{"op":"start"}}`)
	if len(answers) != 2 || answers[1]["in_reply_to"] != float64(1) {
		t.Fatalf("answers %v", answers)
	}
}

func TestAnAbsentThreadIsOutsideAThreadAndAnAbsentPathIsTheSessionRoot(t *testing.T) {
	handler := &recorder{}
	serveLines(t, handler, initLine,
		`{"type":"request","id":1,"now_ms":1767225600123,"body":{"op":"list","caller":{"requester":"a","channel":"c"}}}`,
		`{"type":"request","id":2,"now_ms":0,"body":{"op":"list","caller":{"requester":"a","channel":"c","thread":""},"path":""}}`)
	if handler.callers[0].InThread || !handler.callers[1].InThread {
		t.Fatalf("thread presence lost: %+v", handler.callers)
	}
	if handler.paths[0] != nil || handler.paths[1] == nil || len(handler.paths[1]) != 0 {
		t.Fatalf("an absent path and an empty one must differ: %q", handler.paths)
	}
	if handler.nows[0].UnixMilli() != 1767225600123 {
		t.Fatalf("now_ms became %v", handler.nows[0])
	}
}

func TestARefusalIsAReplyAndAnyOtherErrorIsAnError(t *testing.T) {
	refused := serveLines(t, &recorder{fail: &Refusal{Reason: "not_found", Message: "no such file"}}, initLine,
		`{"type":"request","id":1,"now_ms":0,"body":{"op":"read","caller":{"requester":"a","channel":"c"},"path":"61"}}`)
	body, _ := refused[1]["body"].(map[string]any)
	if refused[1]["type"] != "reply" || body["reason"] != "not_found" || body["message"] != "no such file" {
		t.Fatalf("a refusal answered %v", refused[1])
	}
	failed := serveLines(t, &recorder{fail: errors.New("disk full")}, initLine,
		`{"type":"request","id":1,"now_ms":0,"body":{"op":"tick"}}`)
	if failed[1]["type"] != "error" || failed[1]["message"] != "disk full" {
		t.Fatalf("an I/O failure answered %v", failed[1])
	}
}

func TestEmptyListsAreJSONArraysNotNull(t *testing.T) {
	answers := serveLines(t, &recorder{}, initLine,
		`{"type":"request","id":1,"now_ms":0,"body":{"op":"start"}}`,
		`{"type":"request","id":2,"now_ms":0,"body":{"op":"write","caller":{"requester":"a","channel":"c"},"path":"61","content":""}}`)
	for index, want := range []string{`{"outcome":"swept","swept":[]}`, `{"evicted":[],"outcome":"written","path":"y/a"}`} {
		got, _ := json.Marshal(answers[index+1]["body"])
		if string(got) != want {
			t.Fatalf("answer %s, want %s", got, want)
		}
	}
}

func TestNonHexPathIsAnError(t *testing.T) {
	answers := serveLines(t, &recorder{}, initLine,
		`{"type":"request","id":1,"now_ms":0,"body":{"op":"read","caller":{"requester":"a","channel":"c"},"path":"zz"}}`)
	if answers[1]["type"] != "error" {
		t.Fatalf("answered %v", answers[1])
	}
}
