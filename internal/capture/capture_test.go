package capture

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadHeaderAndEntries(t *testing.T) {
	in := `{"capture":{"version":1,"agent":"cursor"}}

{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},"t":0}
{"from":"agent", "msg": { "jsonrpc": "2.0", "id": 1, "result": {} } }
`
	c, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent() != "cursor" {
		t.Fatalf("agent = %q", c.Agent())
	}
	if len(c.Entries) != 2 {
		t.Fatalf("entries = %d", len(c.Entries))
	}
	e := c.Entries[1]
	if e.From != FromAgent || e.Line != 4 || e.T != nil {
		t.Fatalf("entry = %+v", e)
	}
	if got, want := string(e.Msg), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
		t.Fatalf("msg = %s, want %s", got, want)
	}
	if *c.Entries[0].T != 0 {
		t.Fatalf("t = %d", *c.Entries[0].T)
	}
}

func TestReadWithoutHeaderOrFinalNewline(t *testing.T) {
	c, err := Read(strings.NewReader(`{"from":"agent","msg":{"jsonrpc":"2.0","method":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Header != nil || c.Agent() != "" || len(c.Entries) != 1 {
		t.Fatalf("capture = %+v", c)
	}
}

func TestReadReportsLineAndReason(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		reason   string
	}{
		{"garbage", "{\"from\":\"agent\",\"msg\":{}}\nnot json\n", 2, "not a JSON object"},
		{"broken json", `{"from":"agent"`, 1, "invalid JSON"},
		{"no from", `{"msg":{}}`, 1, `missing "from"`},
		{"bad from", `{"from":"server","msg":{}}`, 1, `"from" must be`},
		{"msg not object", `{"from":"agent","msg":[1]}`, 1, `"msg" must be`},
		{"msg missing", `{"from":"agent"}`, 1, `"msg" must be`},
		{"bad t", `{"from":"agent","msg":{},"t":"soon"}`, 1, `"t" must be`},
		{"negative t", `{"from":"agent","msg":{},"t":-1}`, 1, `"t" must be`},
		{"late header", "{\"from\":\"agent\",\"msg\":{}}\n{\"capture\":{\"version\":1}}", 2, "header must be the first line"},
		{"version", `{"capture":{"version":2}}`, 1, "unsupported capture version 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(le.Reason, tc.reason) {
				t.Fatalf("err = %v, want line %d reason containing %q", err, tc.line, tc.reason)
			}
		})
	}
}

func TestReadRejectsOverlongLine(t *testing.T) {
	long := `{"from":"agent","msg":{"x":"` + strings.Repeat("a", MaxLineBytes) + `"}}`
	_, err := Read(strings.NewReader("\n" + long))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, &Header{Agent: "claude", Version: 7})
	if err != nil {
		t.Fatal(err)
	}
	clock := w.start
	w.now = func() time.Time { clock = clock.Add(5 * time.Millisecond); return clock }
	if err := w.Write(FromClient, []byte(` {"jsonrpc":"2.0", "id":1,"method":"initialize"} `)); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(FromAgent, []byte(`[1]`)); err == nil {
		t.Fatal("non-object accepted")
	}
	want := "{\"capture\":{\"version\":1,\"agent\":\"claude\"}}\n" +
		"{\"from\":\"client\",\"msg\":{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"},\"t\":5}\n"
	if buf.String() != want {
		t.Fatalf("capture:\n%s\nwant:\n%s", buf.String(), want)
	}
	c, err := Read(&buf)
	if err != nil || c.Agent() != "claude" || len(c.Entries) != 1 || *c.Entries[0].T != 5 {
		t.Fatalf("read back: %+v, %v", c, err)
	}
}

func TestTapSplitsLinesAcrossWrites(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, nil)
	tap := w.Tap(FromAgent)
	for _, chunk := range []string{`{"jsonrpc":"2.0",`, `"method":"a"}` + "\n\n" + `garbage` + "\n" + `{"id":1,`, `"result":{}}` + "\n" + `{"partial":`} {
		if n, err := tap.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	c, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) != 2 || string(c.Entries[0].Msg) != `{"jsonrpc":"2.0","method":"a"}` || string(c.Entries[1].Msg) != `{"id":1,"result":{}}` {
		t.Fatalf("entries = %+v", c.Entries)
	}
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
}

// TestTapDropsAnOverLongLineWhole pins that nothing of a line longer than
// MaxLineBytes is recorded, not even a tail that looks like a message.
func TestTapDropsAnOverLongLineWhole(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, nil)
	tap := w.Tap(FromAgent)
	junk := bytes.Repeat([]byte("x"), 1<<20)
	for written := 0; written <= MaxLineBytes; written += len(junk) {
		if _, err := tap.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tap.Write([]byte(`{"id":9,"result":{}}` + "\n" + `{"id":1,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	c, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) != 1 || string(c.Entries[0].Msg) != `{"id":1,"result":{}}` {
		t.Fatalf("entries = %d, first %s", len(c.Entries), c.Entries[0].Msg)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterKeepsFirstError(t *testing.T) {
	w, err := NewWriter(failingWriter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(FromAgent, []byte(`{}`)); err == nil || w.Err() == nil {
		t.Fatal("write error not reported")
	}
	if _, err := w.Tap(FromClient).Write([]byte("{}\n")); err != nil {
		t.Fatal("tap must not fail its caller")
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"capture\":{\"version\":1,\"agent\":\"x\"}}\n{\"from\":\"agent\",\"msg\":{\"a\":1},\"t\":3}\n"))
	f.Add([]byte(`{"from":"client","msg":{}}`))
	f.Add([]byte("\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		// What was read writes back and reads again to the same entries.
		var buf bytes.Buffer
		w, err := NewWriter(&buf, c.Header)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Entries {
			if err := w.Write(e.From, e.Msg); err != nil {
				t.Fatalf("rewrite %s: %v", e.Msg, err)
			}
		}
		c2, err := Read(&buf)
		if err != nil || len(c2.Entries) != len(c.Entries) {
			t.Fatalf("reread: %v (%d vs %d)", err, len(c2.Entries), len(c.Entries))
		}
		for i := range c.Entries {
			if !bytes.Equal(c.Entries[i].Msg, c2.Entries[i].Msg) || c.Entries[i].From != c2.Entries[i].From {
				t.Fatalf("entry %d changed: %s -> %s", i, c.Entries[i].Msg, c2.Entries[i].Msg)
			}
		}
	})
}

func TestWriterKeepsMessageBytes(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, nil)
	w.now = func() time.Time { return w.start }
	if err := w.Write(FromAgent, []byte(`{"text":"a<b && c>d"}`)); err != nil {
		t.Fatal(err)
	}
	if want := `{"from":"agent","msg":{"text":"a<b && c>d"},"t":0}` + "\n"; buf.String() != want {
		t.Fatalf("got %s", buf.String())
	}
	if err := w.Write("server", []byte(`{}`)); err == nil {
		t.Fatal("unknown direction accepted")
	}
}

// PromptSteps shows a queued prompt (sent before the answer of the one
// before it) in wire order, pairs answers by id value, and skips answers
// to other requests.
func TestPromptStepsInWireOrder(t *testing.T) {
	c, err := Read(strings.NewReader(`{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"one"},{"type":"text","text":"more"}]}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"/clear"}]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":3.0,"result":{"stopReason":"end_turn"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"no"}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range c.PromptSteps() {
		got = append(got, s.String())
	}
	want := []string{"sent one\nmore", "sent /clear", "answered one\nmore", "answered /clear"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("steps %q, want %q", got, want)
	}
}

// FuzzPromptSteps reads any bytes as a capture and lists its prompt
// exchange: it must not panic, and every answer follows the prompt it
// answers, at most once.
func FuzzPromptSteps(f *testing.F) {
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"a"}]}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"b"}]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":3,"result":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":3,"result":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":4.0,"error":{"code":1,"message":"x"}}}
`))
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":"x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		pending := map[string]int{}
		for _, s := range c.PromptSteps() {
			if !s.Answer {
				pending[s.Text]++
				continue
			}
			if pending[s.Text] == 0 {
				t.Fatalf("answer to %q before any prompt with that text", s.Text)
			}
			pending[s.Text]--
		}
	})
}
