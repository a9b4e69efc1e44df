package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidemark.example/go-scratchpad/tidemark"
)

// converse feeds lines to serve and decodes every answer line.
func converse(t *testing.T, lines ...string) []map[string]any {
	t.Helper()
	var output bytes.Buffer
	if err := tidemark.Serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &output, &adapter{}, identity, t.Logf); err != nil {
		t.Fatal(err)
	}
	var answers []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(output.String()), "\n") {
		var answer map[string]any
		if err := json.Unmarshal([]byte(line), &answer); err != nil {
			t.Fatalf("stdout carried a line that is not JSON: %q", line)
		}
		answers = append(answers, answer)
	}
	return answers
}

func encode(t *testing.T, value any) string {
	encoded, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	return string(encoded)
}

func TestTheProbeLearnsProfileAndCapabilitiesButNotTheDigest(t *testing.T) {
	answers := converse(t, `{"type":"init","id":0,"protocol":"tidemark/1","profile":null,"root":"","workdir":""}`)
	answer := answers[0]
	if answer["type"] != "init_ok" || answer["in_reply_to"] != float64(0) {
		t.Fatalf("probe answer %v", answer)
	}
	capabilities := encode(t, answer["capabilities"])
	if capabilities != `["binary_content"]` {
		t.Fatalf("capabilities %s: this store keeps any bytes and names its own way", capabilities)
	}
}

func TestAnotherProtocolVersionIsAnError(t *testing.T) {
	answers := converse(t, `{"type":"init","id":0,"protocol":"tidemark/2","profile":"scratchpad","root":""}`)
	if answers[0]["type"] != "error" {
		t.Fatalf("answered %v", answers[0])
	}
}

func TestNamesAreAnsweredWhenUnmountedAndRefusalsAreReplies(t *testing.T) {
	caller := `{"requester":"alice","channel":"general","thread":"T1"}`
	answers := converse(t,
		`{"type":"init","id":0,"protocol":"tidemark/1","profile":"scratchpad","root":"","workdir":"","knobs":{}}`,
		`{"type":"request","id":7,"now_ms":1767225600000,"body":{"op":"names","caller":`+caller+`}}`,
		`{"type":"request","id":8,"now_ms":1767225600000,"body":{"op":"write","caller":`+caller+`,"path":"6e","content":""}}`,
	)
	names := answers[1]["body"].(map[string]any)
	if names["outcome"] != "names" || !strings.HasPrefix(names["session"].(string), "t-") {
		t.Fatalf("names answer %v", answers[1])
	}
	refused := answers[2]["body"].(map[string]any)
	if answers[2]["type"] != "reply" || refused["reason"] != "unmounted" {
		t.Fatalf("write on an unmounted root answered %v", answers[2])
	}
}

func TestKnobsAsSentDecideAndContentRoundTripsAsHex(t *testing.T) {
	root := t.TempDir()
	caller := `{"requester":"alice","channel":"general"}`
	init := encode(t, map[string]any{"type": "init", "id": 0, "protocol": "tidemark/1", "profile": "scratchpad",
		"root": root, "workdir": t.TempDir(), "knobs": map[string]int{"max_file_bytes": 2, "session_cap_bytes": 10}})
	answers := converse(t, init,
		`{"type":"request","id":1,"now_ms":1767225600000,"body":{"op":"start"}}`,
		`{"type":"request","id":2,"now_ms":1767225600000,"body":{"op":"write","caller":`+caller+`,"path":"612e62696e","content":"00ff"}}`,
		`{"type":"request","id":3,"now_ms":1767225600000,"body":{"op":"write","caller":`+caller+`,"path":"612e62696e","content":"000000"}}`,
		`{"type":"request","id":4,"now_ms":1767225600000,"body":{"op":"read","caller":`+caller+`,"path":"612e62696e"}}`,
		`{"type":"request","id":5,"now_ms":1767225600000,"body":{"op":"list","caller":`+caller+`}}`,
	)
	if got := encode(t, answers[1]["body"]); got != `{"outcome":"swept","swept":[]}` {
		t.Fatalf("start answered %s", got)
	}
	if answers[2]["body"].(map[string]any)["evicted"] == nil {
		t.Fatalf("written without an evicted list: %v", answers[2])
	}
	if reason := answers[3]["body"].(map[string]any)["reason"]; reason != "too_large" {
		t.Fatalf("a 3-byte write under max_file_bytes 2 answered %v", answers[3])
	}
	if content := answers[4]["body"].(map[string]any)["content"]; content != "00ff" {
		t.Fatalf("read back %v", content)
	}
	entries := answers[5]["body"].(map[string]any)["entries"].([]any)
	if len(entries) != 1 || !strings.HasSuffix(entries[0].(map[string]any)["path"].(string), "/a.bin") {
		t.Fatalf("listing %v", entries)
	}
	if matches, _ := filepath.Glob(filepath.Join(root, "c-*", "*", "a.bin")); len(matches) != 1 {
		t.Fatalf("the file is not at <root>/<session>/<requester>/a.bin: %v", matches)
	}
	if _, err := os.Stat(filepath.Join(root, "a.bin")); !os.IsNotExist(err) {
		t.Fatal("the file landed directly under the root")
	}
}
