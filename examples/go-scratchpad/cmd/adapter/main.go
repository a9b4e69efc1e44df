// Command adapter speaks tidemark/1 (conformance/PROTOCOL.md) on stdin and stdout over the
// scratchpad package: it decodes each request, calls the store with the handed-in time, and
// encodes the outcome. Logs go to stderr; stdout carries protocol lines only.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"tidemark.example/go-scratchpad/scratchpad"
)

const protocolVersion = "tidemark/1"

// maxLineBytes is the protocol's longest line (64 MiB).
const maxLineBytes = 64 << 20

type message struct {
	Type     string                 `json:"type"`
	ID       uint64                 `json:"id"`
	Protocol string                 `json:"protocol"`
	Profile  *string                `json:"profile"`
	Root     string                 `json:"root"`
	Knobs    map[string]json.Number `json:"knobs"`
	NowMs    int64                  `json:"now_ms"`
	Body     *requestBody           `json:"body"`
}

type requestBody struct {
	Op      string      `json:"op"`
	Caller  *callerJSON `json:"caller"`
	Path    *string     `json:"path"`
	Content *string     `json:"content"`
}

type callerJSON struct {
	Requester string  `json:"requester"`
	Channel   string  `json:"channel"`
	Thread    *string `json:"thread"`
}

func main() {
	log.SetOutput(os.Stderr)
	log.SetPrefix("go-scratchpad: ")
	if err := serve(os.Stdin, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// serve answers every message in order until stdin closes.
func serve(input io.Reader, output io.Writer) error {
	reader := bufio.NewReaderSize(input, 1<<16)
	writer := bufio.NewWriter(output)
	session := &adapter{}
	for {
		line, err := readLine(reader)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(line) == 0 {
			continue
		}
		var msg message
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("undecodable line: %w", err)
		}
		answer := session.handle(msg)
		encoded, err := json.Marshal(answer)
		if err != nil {
			return err
		}
		writer.Write(encoded)
		writer.WriteByte('\n')
		if err := writer.Flush(); err != nil {
			return err
		}
	}
}

func readLine(reader *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := reader.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLineBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return trimNewline(line), nil
		}
		return trimNewline(line), err
	}
}

func trimNewline(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r' || line[len(line)-1] == ' ') {
		line = line[:len(line)-1]
	}
	return line
}

type adapter struct {
	store *scratchpad.Store
}

type object = map[string]any

func (a *adapter) handle(msg message) object {
	switch msg.Type {
	case "init":
		if err := a.init(msg); err != nil {
			return object{"type": "error", "in_reply_to": msg.ID, "message": err.Error()}
		}
		return object{
			"type": "init_ok", "in_reply_to": msg.ID, "protocol": protocolVersion,
			"implementation": "go-scratchpad 0.1.0",
			"profiles":       []string{"scratchpad"},
			"capabilities":   []string{"binary_content"},
		}
	case "request":
		body, err := a.request(msg)
		if err != nil {
			log.Printf("request %d failed: %v", msg.ID, err)
			return object{"type": "error", "in_reply_to": msg.ID, "message": err.Error()}
		}
		return object{"type": "reply", "in_reply_to": msg.ID, "body": body}
	default:
		return object{"type": "error", "in_reply_to": msg.ID, "message": fmt.Sprintf("unknown message type %q", msg.Type)}
	}
}

func (a *adapter) init(msg message) error {
	if msg.Protocol != protocolVersion {
		return fmt.Errorf("this program speaks %s, not %q", protocolVersion, msg.Protocol)
	}
	config, err := configFromKnobs(msg.Knobs)
	if err != nil {
		return err
	}
	store, err := scratchpad.Open(msg.Root, config)
	if err != nil {
		return err
	}
	a.store = store
	return nil
}

// configFromKnobs maps SPEC.md's knob names onto the store's configuration; a knob not sent
// keeps SPEC.md's default, and an unknown one is logged and ignored.
func configFromKnobs(knobs map[string]json.Number) (scratchpad.Config, error) {
	config := scratchpad.DefaultConfig()
	for name, raw := range knobs {
		value, err := raw.Int64()
		if err != nil {
			return config, fmt.Errorf("knob %s: %q is not an integer", name, raw)
		}
		milliseconds := time.Duration(value) * time.Millisecond
		switch name {
		case "session_cap_bytes":
			config.SessionCapBytes = value
		case "requester_ceiling_bytes":
			config.RequesterCeilingBytes = value
		case "max_file_bytes":
			config.MaxFileBytes = value
		case "thread_quiet_ms":
			config.ThreadQuiet = milliseconds
		case "pairing_idle_ms":
			config.PairingIdle = milliseconds
		case "sweep_interval_ms":
			config.SweepInterval = milliseconds
		case "max_depth":
			config.MaxDepth = int(value)
		case "max_path_bytes":
			config.MaxPathBytes = int(value)
		default:
			log.Printf("ignoring unknown knob %s", name)
		}
	}
	return config, nil
}

// request performs one operation. A refusal is an ordinary reply; any other error is an
// `error` message.
func (a *adapter) request(msg message) (object, error) {
	if a.store == nil {
		return nil, errors.New("a request before init")
	}
	if msg.Body == nil {
		return nil, errors.New("a request without a body")
	}
	body := msg.Body
	now := time.UnixMilli(msg.NowMs)
	var caller scratchpad.Caller
	if body.Caller != nil {
		caller = scratchpad.Caller{Requester: body.Caller.Requester, Channel: body.Caller.Channel}
		if body.Caller.Thread != nil {
			caller.Thread, caller.InThread = *body.Caller.Thread, true
		}
	} else if body.Op != "start" && body.Op != "tick" {
		return nil, fmt.Errorf("op %s without a caller", body.Op)
	}
	path, err := decodeHex("path", body.Path)
	if err != nil {
		return nil, err
	}
	switch body.Op {
	case "start", "tick":
		run := a.store.Tick
		if body.Op == "start" {
			run = a.store.Start
		}
		swept, err := run(now)
		if err != nil {
			return nil, err
		}
		return object{"outcome": "swept", "swept": swept}, nil
	case "names":
		names := scratchpad.NamesOf(caller)
		return object{"outcome": "names", "session": names.Session, "requester": names.Requester}, nil
	case "write":
		content, err := decodeHex("content", body.Content)
		if err != nil {
			return nil, err
		}
		if path == nil || content == nil {
			return nil, errors.New("write needs path and content")
		}
		result, err := a.store.Write(caller, path, content, now)
		return outcome(err, func() object {
			return object{"outcome": "written", "path": result.Path, "evicted": result.Evicted}
		})
	case "read":
		if path == nil {
			return nil, errors.New("read needs a path")
		}
		content, err := a.store.Read(caller, path)
		return outcome(err, func() object {
			return object{"outcome": "content", "content": hex.EncodeToString(content)}
		})
	case "list":
		entries, err := a.store.List(caller, path)
		return outcome(err, func() object {
			listed := make([]object, len(entries))
			for index, entry := range entries {
				listed[index] = object{"path": entry.Path, "size": entry.Size}
			}
			return object{"outcome": "listing", "entries": listed}
		})
	case "remove":
		if path == nil {
			return nil, errors.New("remove needs a path")
		}
		err := a.store.Remove(caller, path, now)
		return outcome(err, func() object { return object{"outcome": "removed"} })
	default:
		return nil, fmt.Errorf("unknown op %q", body.Op)
	}
}

// outcome turns a refusal into a `refused` reply and passes any other error up.
func outcome(err error, success func() object) (object, error) {
	var refusal *scratchpad.Refusal
	if errors.As(err, &refusal) {
		return object{"outcome": "refused", "reason": string(refusal.Reason), "message": refusal.Message}, nil
	}
	if err != nil {
		return nil, err
	}
	return success(), nil
}

// decodeHex decodes an optional lowercase-hex field; absent stays nil, present-but-empty is
// an empty, non-nil slice.
func decodeHex(field string, value *string) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	decoded, err := hex.DecodeString(*value)
	if err != nil {
		return nil, fmt.Errorf("%s is not hex: %w", field, err)
	}
	if decoded == nil {
		decoded = []byte{}
	}
	return decoded, nil
}
