// Command identity replays recorded agent frame streams through the whole
// client pipeline (our SDK's ClientSideConnection, the adapter Tracker and
// the client's extension handler) and writes what came out: every
// normalised adapter event, the Tracker's counters and every JSON-RPC
// message the client wrote back, replies included.
//
// It is built twice: with -tags withcursor the Cursor adapter is installed
// (its dialect registered, its cursor/task handler answering extension
// requests); without the tag it is absent from the binary. For every
// non-Cursor capture the two outputs must be byte identical
// (identity -compare); a Cursor capture must differ, which proves the
// Cursor adapter was really installed in the first build.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // installed in both builds, as in acpscope
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

// replayGuard bounds one capture's replay (hang guard).
const replayGuard = 60 * time.Second

// Output is what one build produced for one capture.
type Output struct {
	Capture  string           `json:"capture"`
	Agent    string           `json:"agent"`
	Dialect  string           `json:"dialect"`
	Events   []string         `json:"events"`
	Counters map[string]int64 `json:"counters"`
	// ClientWire are the client's outbound JSON-RPC lines, in order.
	ClientWire []string `json:"clientWire"`
	// Calls are the outcomes of the client's own requests.
	Calls  []string `json:"calls"`
	Errors []string `json:"errors"`
}

// Results is the file one build writes.
type Results struct {
	CursorInstalled bool     `json:"cursorInstalled"`
	Outputs         []Output `json:"outputs"`
}

func main() {
	dirs := flag.String("testdata", "conformance/testdata", "comma-separated directories of capture files (*.jsonl)")
	out := flag.String("out", "", "write the results to this file (default stdout)")
	compare := flag.Bool("compare", false, "compare two result files: identity -compare WITH.json WITHOUT.json")
	same := flag.Bool("same", false, "check two runs of one build agree on every non-Cursor capture: identity -same RUN1.json RUN2.json")
	flag.Parse()
	// Connection logs are not output of the pipeline under test.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))

	if *compare || *same {
		if flag.NArg() != 2 {
			fmt.Fprintln(os.Stderr, "usage: identity -compare WITH.json WITHOUT.json | identity -same RUN1.json RUN2.json")
			os.Exit(2)
		}
		if *same {
			os.Exit(sameFiles(os.Stdout, flag.Arg(0), flag.Arg(1)))
		}
		os.Exit(compareFiles(os.Stdout, flag.Arg(0), flag.Arg(1)))
	}

	var files []string
	for _, dir := range strings.Split(*dirs, ",") {
		found, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil || len(found) == 0 {
			fmt.Fprintf(os.Stderr, "identity: no captures in %s (%v)\n", dir, err)
			os.Exit(2)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	res := Results{CursorInstalled: cursorInstalled}
	for _, f := range files {
		res.Outputs = append(res.Outputs, replayFile(f))
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		os.Exit(2)
	}
	b = append(b, '\n')
	if *out == "" {
		_, _ = os.Stdout.Write(b)
		return
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		os.Exit(2)
	}
}

// lineTap records every complete line written through it.
type lineTap struct {
	w     io.Writer
	mu    sync.Mutex
	buf   []byte
	lines []string
}

func (t *lineTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.buf[:i]))
		t.buf = t.buf[i+1:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *lineTap) all() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string{}, t.lines...)
}

// replayFile plays one capture against a live client and collects the output.
func replayFile(path string) Output {
	o := Output{Capture: filepath.ToSlash(path), Events: []string{}, Calls: []string{}, Errors: []string{}}
	c, err := capture.ReadFile(path)
	if err != nil {
		o.Errors = append(o.Errors, err.Error())
		return o
	}
	o.Agent = c.Agent()

	var mu sync.Mutex
	tracker, err := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		b, err := json.Marshal(e)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			o.Errors = append(o.Errors, "event: "+err.Error())
			return
		}
		o.Events = append(o.Events, string(b))
	}})
	if err != nil {
		o.Errors = append(o.Errors, err.Error())
		return o
	}

	ctx, cancel := context.WithTimeout(context.Background(), replayGuard)
	defer cancel()
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := replay.NewAgent(c).Serve(ctx, agentIn, agentOut)
		_ = agentOut.Close()
		served <- err
	}()

	tap := &lineTap{w: clientOut}
	client := &identityClient{tracker: tracker, ext: newExtensionHandler(tracker)}
	conn := acp.NewClientSideConnection(client, tap, clientIn)
	drive(ctx, c, conn, tracker, &o)

	_ = clientOut.Close()
	select {
	case err := <-served:
		if err != nil {
			o.Errors = append(o.Errors, "replay agent: "+err.Error())
		}
	case <-ctx.Done():
		o.Errors = append(o.Errors, "replay agent did not finish (hang guard)")
	}
	select {
	case <-conn.Done():
	case <-ctx.Done():
		o.Errors = append(o.Errors, "client connection did not finish (hang guard)")
	}
	tracker.Flush() // events of cursor/task requests answered before delivery

	mu.Lock()
	defer mu.Unlock()
	o.Dialect = tracker.Dialect()
	o.Counters = tracker.Counters()
	o.ClientWire = tap.all()
	return o
}

// drive sends the capture's client requests from the live client, in
// order, feeding the Tracker's lifecycle the way a consumer's client does.
func drive(ctx context.Context, c *capture.Capture, conn *acp.ClientSideConnection, t *adapter.Tracker, o *Output) {
	record := func(method string, res any, err error) {
		if err != nil {
			var re *acp.RequestError
			if b, mErr := json.Marshal(err); mErr == nil && asRequestError(err, &re) {
				o.Calls = append(o.Calls, method+" error "+string(b))
			} else {
				o.Calls = append(o.Calls, method+" error "+err.Error())
			}
			return
		}
		b, _ := json.Marshal(res)
		o.Calls = append(o.Calls, method+" "+string(b))
	}
	for _, e := range c.Entries {
		if e.From != capture.FromClient {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(e.Msg, &m) != nil || m.Method == "" {
			continue // responses to agent requests are the live client's to give
		}
		switch m.Method {
		case acp.AgentMethodInitialize:
			var req acp.InitializeRequest
			_ = json.Unmarshal(m.Params, &req)
			resp, err := conn.Initialize(ctx, req)
			record(m.Method, resp, err)
			if err == nil {
				t.Initialize(&req, &resp)
			}
		case acp.AgentMethodSessionNew:
			var req acp.NewSessionRequest
			_ = json.Unmarshal(m.Params, &req)
			resp, err := conn.NewSession(ctx, req)
			record(m.Method, resp, err)
			if err == nil {
				t.SessionStarted(string(resp.SessionId))
			}
		case acp.AgentMethodSessionLoad:
			var req acp.LoadSessionRequest
			_ = json.Unmarshal(m.Params, &req)
			// The Tracker's contract: loading starts when the request is
			// sent (what the agent replays meanwhile is history) and ends
			// with the response, where it is on the wire: the SDK's
			// in-order hook runs before the frames after it are handled.
			t.SessionLoaded(string(req.SessionId))
			var ended sync.Once
			end := func(ok bool) { ended.Do(func() { t.SessionLoadFinished(string(req.SessionId), ok) }) }
			traced := acp.WithRequestTrace(ctx, &acp.RequestTrace{ResponseInOrder: func(err error) { end(err == nil) }})
			resp, err := conn.LoadSession(traced, req)
			end(false)
			record(m.Method, resp, err)
		case acp.AgentMethodSessionPrompt:
			var req acp.PromptRequest
			_ = json.Unmarshal(m.Params, &req)
			t.PromptStarted(string(req.SessionId))
			resp, err := conn.Prompt(ctx, req)
			t.PromptEnded(string(req.SessionId))
			record(m.Method, resp, err)
		case acp.AgentMethodSessionCancel:
			var req acp.CancelNotification
			_ = json.Unmarshal(m.Params, &req)
			record(m.Method, nil, conn.Cancel(ctx, req))
		case acp.AgentMethodSessionClose:
			var req acp.CloseSessionRequest
			_ = json.Unmarshal(m.Params, &req)
			resp, err := conn.CloseSession(ctx, req)
			record(m.Method, resp, err)
			t.SessionClosed(string(req.SessionId))
		default:
			o.Calls = append(o.Calls, m.Method+" skipped")
		}
	}
}

// compareFiles compares the build with the Cursor adapter (with) and the
// build without it, printing a table; it returns the exit code.
func compareFiles(w io.Writer, withPath, withoutPath string) int {
	with, err := load(withPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		return 2
	}
	without, err := load(withoutPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		return 2
	}
	if !with.CursorInstalled || without.CursorInstalled {
		fmt.Fprintln(w, "identity: the first file must come from the withcursor build, the second from the plain build")
		return 2
	}
	return report(w, with, without)
}

func load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// isCursorCapture reports whether a capture was recorded from Cursor (its
// header names the cursor dialect); the identity requirement covers every
// other agent. Cursor captures are expected to differ between the builds
// and, where cursor/task and its tool call arrive together, to vary in
// order from run to run: the SDK handles the request on its own goroutine
// while the notification queue drains, and the adapter accepts both orders.
func isCursorCapture(o Output) bool {
	return strings.EqualFold(o.Agent, adapter.DialectCursor)
}
