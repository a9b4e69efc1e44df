package tidemark

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ProtocolVersion is the protocol this package speaks.
const ProtocolVersion = "tidemark/1"

// maxLineBytes is the protocol's longest line (64 MiB).
const maxLineBytes = 64 << 20

// Identity is what init_ok tells the harness about the program.
type Identity struct {
	Implementation string
	Capabilities   []string
}

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

type object = map[string]any

// Serve answers every message on input, in order, until input closes. It returns an error only
// when it cannot go on (an undecodable line, a line over 64 MiB, a broken pipe); the harness
// then reports the exit and stderr.
func Serve(input io.Reader, output io.Writer, handler Handler, identity Identity, logf func(string, ...any)) error {
	reader := bufio.NewReaderSize(input, 1<<16)
	writer := bufio.NewWriter(output)
	server := &server{handler: handler, identity: identity, logf: logf}
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
		encoded, err := json.Marshal(server.answer(msg))
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

// readLine reads one line of any length up to maxLineBytes, without its line ending. It
// returns io.EOF only when input ended with no line left.
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
			err = nil
		}
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1]
		}
		return line, err
	}
}

type server struct {
	handler  Handler
	identity Identity
	logf     func(string, ...any)
	ready    bool
}

func (s *server) answer(msg message) object {
	switch msg.Type {
	case "init":
		if err := s.init(msg); err != nil {
			return object{"type": "error", "in_reply_to": msg.ID, "message": err.Error()}
		}
		capabilities := s.identity.Capabilities
		if capabilities == nil {
			capabilities = []string{}
		}
		return object{"type": "init_ok", "in_reply_to": msg.ID, "protocol": ProtocolVersion,
			"implementation": s.identity.Implementation, "profiles": []string{"scratchpad"},
			"capabilities": capabilities}
	case "request":
		body, err := s.request(msg)
		if err != nil {
			s.logf("request %d failed: %v", msg.ID, err)
			return object{"type": "error", "in_reply_to": msg.ID, "message": err.Error()}
		}
		return object{"type": "reply", "in_reply_to": msg.ID, "body": body}
	default:
		return object{"type": "error", "in_reply_to": msg.ID, "message": fmt.Sprintf("unknown message type %q", msg.Type)}
	}
}

func (s *server) init(msg message) error {
	if msg.Protocol != ProtocolVersion {
		return fmt.Errorf("this program speaks %s, not %q", ProtocolVersion, msg.Protocol)
	}
	knobs := Knobs{}
	for name, raw := range msg.Knobs {
		value, err := raw.Int64()
		if err != nil {
			return fmt.Errorf("knob %s: %q is not an integer", name, raw)
		}
		knobs[name] = value
	}
	if err := s.handler.Init(msg.Root, knobs); err != nil {
		return err
	}
	s.ready = true
	return nil
}

// request performs one operation. A *Refusal becomes a `refused` reply; any other error an
// `error` message.
func (s *server) request(msg message) (object, error) {
	if !s.ready {
		return nil, errors.New("a request before init")
	}
	body := msg.Body
	if body == nil {
		return nil, errors.New("a request without a body")
	}
	now := time.UnixMilli(msg.NowMs)
	var caller Caller
	if body.Caller != nil {
		caller = Caller{Requester: body.Caller.Requester, Channel: body.Caller.Channel}
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
	if path == nil && (body.Op == "write" || body.Op == "read" || body.Op == "remove") {
		return nil, fmt.Errorf("op %s without a path", body.Op)
	}
	switch body.Op {
	case "start", "tick":
		run := s.handler.Tick
		if body.Op == "start" {
			run = s.handler.Start
		}
		swept, err := run(now)
		return outcome(err, func() object { return object{"outcome": "swept", "swept": nonNil(swept)} })
	case "names":
		session, requester := s.handler.Names(caller)
		return object{"outcome": "names", "session": session, "requester": requester}, nil
	case "write":
		content, err := decodeHex("content", body.Content)
		if err != nil {
			return nil, err
		}
		if content == nil {
			return nil, errors.New("op write without content")
		}
		written, err := s.handler.Write(caller, path, content, now)
		return outcome(err, func() object {
			return object{"outcome": "written", "path": written.Path, "evicted": nonNil(written.Evicted)}
		})
	case "read":
		content, err := s.handler.Read(caller, path, now)
		return outcome(err, func() object { return object{"outcome": "content", "content": hex.EncodeToString(content)} })
	case "list":
		entries, err := s.handler.List(caller, path, now)
		return outcome(err, func() object {
			listed := make([]object, len(entries))
			for index, entry := range entries {
				listed[index] = object{"path": entry.Path, "size": entry.Size}
			}
			return object{"outcome": "listing", "entries": listed}
		})
	case "remove":
		err := s.handler.Remove(caller, path, now)
		return outcome(err, func() object { return object{"outcome": "removed"} })
	default:
		return nil, fmt.Errorf("unknown op %q", body.Op)
	}
}

func outcome(err error, success func() object) (object, error) {
	var refusal *Refusal
	if errors.As(err, &refusal) {
		return object{"outcome": "refused", "reason": refusal.Reason, "message": refusal.Message}, nil
	}
	if err != nil {
		return nil, err
	}
	return success(), nil
}

// nonNil keeps an empty list a JSON [] rather than null.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// decodeHex decodes an optional lowercase-hex field: absent is nil, present and empty is an
// empty, non-nil slice.
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
