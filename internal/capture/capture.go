// Package capture reads and writes ACP wire captures: a record of the
// JSON-RPC messages that crossed one client–agent connection, in order.
//
// # Format (version 1)
//
// A capture is JSON lines. An optional first line is a header:
//
//	{"capture":{"version":1,"agent":"cursor"}}
//
// Every other line is one entry:
//
//	{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{…}},"t":12}
//
// "from" is "agent" or "client" (who sent the message), "msg" is exactly one
// JSON-RPC message (an object), and the optional "t" is the number of
// milliseconds since the capture started. Blank lines are ignored. Unknown
// keys are ignored so that later minor additions stay readable; a header with
// a version other than 1 is rejected.
//
// The package is shared by cmd/acpscope (record and replay), the adapter's
// Replayer, the scripted agent of internal/replay and the conformance and
// adapter tests. Message and IDKey are the one JSON-RPC envelope reader and
// id canonicalisation they all use, so a response pairs with its request the
// same way everywhere.
package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Version is the capture format version this package reads and writes.
const Version = 1

// MaxLineBytes bounds one capture line. It matches the SDK's 64 MiB frame
// limit plus room for the entry envelope.
const MaxLineBytes = 64<<20 + 4096

// Direction says which peer sent a message.
type Direction string

// The two directions of a connection.
const (
	FromAgent  Direction = "agent"
	FromClient Direction = "client"
)

// Header is the optional first line of a capture.
type Header struct {
	// Version is the format version; always 1 for captures this package writes.
	Version int `json:"version"`
	// Agent names the agent dialect (cursor, claude, codex, opencode, auggie,
	// copilot, generic); empty when unknown.
	Agent string `json:"agent,omitempty"`
	// Explicit records that Agent was chosen by the user (acpscope's
	// --agent) rather than detected or fallen back to: a replay keeps an
	// explicit dialect, and detects again from the capture's initialize
	// when a recorded one was the generic fallback.
	Explicit bool `json:"explicit,omitempty"`
}

// Entry is one recorded JSON-RPC message.
type Entry struct {
	// From is the sender of Msg.
	From Direction `json:"from"`
	// Msg is the JSON-RPC message exactly as it was on the wire (compacted
	// when read from a capture file).
	Msg json.RawMessage `json:"msg"`
	// T is the time in milliseconds since the capture started, if recorded.
	T *int64 `json:"t,omitempty"`
	// Line is the 1-based line of the entry in the file it was read from; zero
	// for entries that were not read from a file.
	Line int `json:"-"`
}

// Capture is a whole capture held in memory.
type Capture struct {
	// Header is nil when the capture has no header line.
	Header *Header
	// Entries are the messages in wire order.
	Entries []Entry
}

// Agent returns the header's agent name, or "" when there is none.
func (c *Capture) Agent() string {
	if c == nil || c.Header == nil {
		return ""
	}
	return c.Header.Agent
}

// LineError reports a capture line that could not be read.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// Reason says what is wrong with the line.
	Reason string
}

// Error renders the line number and the reason.
func (e *LineError) Error() string {
	return fmt.Sprintf("capture line %d: %s", e.Line, e.Reason)
}

// ErrLineTooLong is the reason given for a line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("line exceeds the capture line limit")

// Read reads a whole capture. The first malformed line stops reading and is
// reported as a *LineError naming its line number and reason.
func Read(r io.Reader) (*Capture, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	c := &Capture{}
	for lineNo := 1; ; lineNo++ {
		line, err := ReadLine(br)
		if errors.Is(err, ErrLineTooLong) {
			return nil, &LineError{Line: lineNo, Reason: err.Error()}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("capture line %d: %w", lineNo, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if perr := c.addLine(trimmed, lineNo); perr != nil {
				return nil, perr
			}
		}
		if errors.Is(err, io.EOF) {
			return c, nil
		}
	}
}

// ReadFile reads the capture stored at path.
func ReadFile(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ReadLine returns the next line of br without its newline (a fresh slice),
// io.EOF with the final (possibly empty) line, or ErrLineTooLong once a line
// passes MaxLineBytes, so that no peer can make a reader hold more. The
// capture reader and the scripted agent read lines with it.
func ReadLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			return nil, ErrLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

// rawLine is the union of the header and entry shapes, decoded once.
type rawLine struct {
	Capture *Header         `json:"capture"`
	From    *Direction      `json:"from"`
	Msg     json.RawMessage `json:"msg"`
	T       json.RawMessage `json:"t"`
}

func (c *Capture) addLine(line []byte, lineNo int) error {
	fail := func(format string, args ...any) error {
		return &LineError{Line: lineNo, Reason: fmt.Sprintf(format, args...)}
	}
	if line[0] != '{' {
		return fail("not a JSON object")
	}
	var raw rawLine
	if err := json.Unmarshal(line, &raw); err != nil {
		return fail("invalid JSON: %v", err)
	}
	if raw.Capture != nil {
		if len(c.Entries) > 0 || c.Header != nil {
			return fail("header must be the first line")
		}
		if raw.Capture.Version != Version {
			return fail("unsupported capture version %d (want %d)", raw.Capture.Version, Version)
		}
		c.Header = raw.Capture
		return nil
	}
	if raw.From == nil {
		return fail(`missing "from"`)
	}
	if *raw.From != FromAgent && *raw.From != FromClient {
		return fail(`"from" must be "agent" or "client", got %q`, string(*raw.From))
	}
	msg := bytes.TrimSpace(raw.Msg)
	if len(msg) == 0 || msg[0] != '{' {
		return fail(`"msg" must be a JSON-RPC message object`)
	}
	e := Entry{From: *raw.From, Msg: compact(msg), Line: lineNo}
	if len(raw.T) > 0 && !bytes.Equal(raw.T, []byte("null")) {
		var t int64
		if err := json.Unmarshal(raw.T, &t); err != nil || t < 0 {
			return fail(`"t" must be a non-negative integer number of milliseconds`)
		}
		e.T = &t
	}
	c.Entries = append(c.Entries, e)
	return nil
}

// compact returns msg without insignificant white space. msg is known to be
// valid JSON, so compaction cannot fail.
func compact(msg []byte) json.RawMessage {
	var b bytes.Buffer
	b.Grow(len(msg))
	if err := json.Compact(&b, msg); err != nil {
		return append(json.RawMessage(nil), msg...)
	}
	return b.Bytes()
}
