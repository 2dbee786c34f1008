package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// referenceEnvelope is the envelope shape upstream decodes with
// encoding/json; the fuzz target checks the hand-written decoder against it.
type referenceEnvelope struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *RequestError    `json:"error,omitempty"`
}

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi\n\u00e9"}}}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":"hello"}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":{"error":"boom"}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"n"}`,
	`{"ID":1,"Method":"m","m\u0065thod":"x","PARAMS":null}`,
	`{"id":1.0e1,"result":[1,{"a":[true,false,null]}]}`,
	`[1,2]`, `null`, `"s"`, `{"id":1,"method":5}`, `{"error":"x"}`, `{"a":"\ud800"}`, "{\"method\":\"\xff\"}",
	`{"jsonrpc":2}`, `{"error":{"code":1.5}}`, `{} x`, `{"a":01}`, `{"a":-}`, `{"a":1e}`, `{"a":"\x"}`,
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got envelope
		gotErr := decodeEnvelope(line, &got)
		var want referenceEnvelope
		wantErr := json.Unmarshal(line, &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decodeEnvelope err %v, encoding/json err %v", line, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		var wantID []byte
		if want.ID != nil {
			wantID = *want.ID
		}
		if !bytes.Equal(got.id, wantID) || (got.id == nil) != (want.ID == nil) {
			t.Fatalf("%q: id %q, want %q", line, got.id, wantID)
		}
		if got.method != want.Method {
			t.Fatalf("%q: method %q, want %q", line, got.method, want.Method)
		}
		if !bytes.Equal(got.params, want.Params) || !bytes.Equal(got.result, want.Result) {
			t.Fatalf("%q: params/result %q/%q, want %q/%q", line, got.params, got.result, want.Params, want.Result)
		}
		if !reflect.DeepEqual(got.err, want.Error) {
			t.Fatalf("%q: error %#v, want %#v", line, got.err, want.Error)
		}
	})
}

func FuzzCanonicalIDKey(f *testing.F) {
	for _, s := range []string{"1", "1.0", "10e-1", "-0", `"a"`, `"\u003c"`, "null", "1e4096", "true", "{}", "0.000001e6", `{"a": [1, 2]}`, `"a b"`, `"\u2028<é>"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Echoing an id gives the bytes upstream's re-marshal gives.
		if json.Valid(raw) {
			want, err := json.Marshal(json.RawMessage(raw))
			if err == nil && string(appendRawID(nil, trimJSONSpace(raw))) != string(want) {
				t.Fatalf("%q: echoed as %q, want %q", raw, appendRawID(nil, trimJSONSpace(raw)), want)
			}
		}
		key, err := canonicalIDKey(raw)
		if err != nil {
			return
		}
		// A canonical key is stable: it canonicalises to itself.
		again, err := canonicalIDKey([]byte(key))
		if err != nil || again != key {
			t.Fatalf("%q: key %q re-canonicalises to %q, %v", raw, key, again, err)
		}
		if v, ok, err := responseIDValue(raw); err == nil && ok {
			if key != string(appendUintID(nil, v)) {
				t.Fatalf("%q: response id %d but key %q", raw, v, key)
			}
		}
	})
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), uint8(3))
	f.Add([]byte("abcdef\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		limit := int(max) + 1
		lr := newLineReader(bytes.NewReader(data), limit)
		lr.br = bufioReaderSize(bytes.NewReader(data), 16)
		want := strings.Split(string(data), "\n")
		for i, w := range want {
			w = strings.TrimSuffix(w, "\r")
			if i == len(want)-1 && w == "" {
				break
			}
			line, err := lr.next()
			if len(w) > limit {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("line %d (%d bytes > %d): err %v", i, len(w), limit, err)
				}
				return
			}
			if string(line) != w {
				t.Fatalf("line %d = %q, want %q", i, line, w)
			}
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("line %d: %v", i, err)
			}
		}
	})
}

// FuzzConnectionInput feeds arbitrary bytes to a live connection: it must
// neither panic nor hang, and must stop cleanly at EOF. Every line it
// writes back must be one JSON-RPC response whose id is a string, a number
// or null (strict JSON-RPC: invalid ids are never echoed).
func FuzzConnectionInput(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s + "\n" + `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}` + "\n"))
	}
	for _, s := range []string{
		`[{"jsonrpc":"2.0","id":91,"method":"m"}]`, `[]`, `{"id":{"a":1},"method":"m"}`, `{"id":[1],"method":"m"}`,
		`{"id":true,"method":"m"}`, `{"id":7,"method":5}`, `{"id":1,"method":`, `null`, `{}`, `42`, `not json`,
	} {
		f.Add([]byte(s + "\n" + `{"jsonrpc":"2.0","id":"ok","method":"m"}` + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer // written by the writer goroutine only, read after Wait
		conn := NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
			if method == "panic" {
				panic("fuzz")
			}
			return params, nil
		}, &out, bytes.NewReader(data))
		conn.SetLogger(quietLogger())
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := conn.Wait(ctx); errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("connection did not stop on %q", data)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var reply struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(line, &reply); err != nil {
				t.Fatalf("reply %q is not a JSON object: %v", line, err)
			}
			if id := string(reply.ID); id != "null" && !validIDKind(reply.ID) {
				t.Fatalf("reply %q carries id %s", line, id)
			}
		}
	})
}

func bufioReaderSize(r io.Reader, n int) *bufio.Reader { return bufio.NewReaderSize(r, n) }

// FuzzEncodeMessage checks outbound envelopes byte for byte against
// upstream's way of writing them (params marshalled, then the envelope
// struct marshalled).
func FuzzEncodeMessage(f *testing.F) {
	f.Add("session/update", []byte(`{"a": "<b>", "c": [1, 2.50]}`), uint16(1))
	f.Add("m\"\u2028é", []byte(`"x"`), uint16(0))
	f.Add("", []byte(`null`), uint16(7))
	f.Fuzz(func(t *testing.T, method string, params []byte, id uint16) {
		var p any
		if len(params) > 0 {
			p = json.RawMessage(params)
		}
		var free freeLists
		e := free.getEncodeBuffer()
		gotErr := encodeMessage(e, uint64(id), method, p)

		ref := referenceEnvelope{JSONRPC: "2.0", Method: method}
		if id != 0 {
			raw := json.RawMessage(appendUintID(nil, uint64(id)))
			ref.ID = &raw
		}
		var wantErr error
		if p != nil {
			ref.Params, wantErr = json.Marshal(p)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("errors differ: %v vs %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		want, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(e.buf.String(), "\n"); got != string(want) {
			t.Fatalf("envelope\n got %s\nwant %s", got, want)
		}
	})
}

// FuzzWriteResponse checks response envelopes byte for byte against
// upstream's way of writing them.
func FuzzWriteResponse(f *testing.F) {
	f.Add([]byte(`1.0e1`), []byte(`{"b": "<x>", "a": 1}`), false)
	f.Add([]byte(`"id <&>"`), []byte(`[1, 2`), false)
	f.Add([]byte(` 7 `), []byte(`{"error": "boom"}`), true)
	f.Fuzz(func(t *testing.T, id, payload []byte, asError bool) {
		if !json.Valid(id) {
			return
		}
		id = trimJSONSpace(id)
		var out bytes.Buffer
		inR, inW := io.Pipe()
		c := NewConnection(nil, &out, inR)
		c.SetLogger(quietLogger())
		defer func() { _ = inW.Close(); _ = c.Close() }()

		raw := json.RawMessage(id)
		ref := referenceEnvelope{JSONRPC: "2.0", ID: &raw}
		if asError {
			var data any
			if json.Unmarshal(payload, &data) != nil {
				return
			}
			rerr := NewInvalidParams(data)
			c.writeResponse(id, nil, rerr)
			ref.Error = rerr
		} else {
			result := json.RawMessage(payload)
			c.writeResponse(id, result, nil)
			b, err := json.Marshal(result)
			if err != nil {
				ref.Error = NewInternalError(map[string]any{"error": err.Error()})
			} else {
				ref.Result = b
			}
		}
		want, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != string(want) {
			t.Fatalf("response\n got %s\nwant %s", got, want)
		}
	})
}
