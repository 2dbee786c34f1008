package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// answersLoadThenSpeaks is an agent that offers session/load and answers
// it with, in the same write, the response and then a message chunk: a
// frame that follows the load on the wire (as codex's post-load idle
// does) and so is live, not history.
func answersLoadThenSpeaks(in io.Reader, out io.WriteCloser) {
	defer out.Close()
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`+"\n", m.ID)
		case "session/load":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n"+
				`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after the load"}}}}`+"\n", m.ID)
		}
	}
}

// The end of a load is where its response is on the wire: a frame the
// agent sent after the session/load response is handled after the load
// ended (the tracker's SessionLoadFinished, the view's end-of-history
// note), never before it, as replay sees it. The caller's code after
// LoadSession returns runs alongside the handlers of later frames, so the
// load end is emitted from the SDK's in-order response hook
// (acp.RequestTrace.ResponseInOrder). Each run is one draw of the race
// between the two; before the hook a few dozen runs lost it.
func TestLoadEndsBeforeTheFramesAfterIt(t *testing.T) {
	for i := range 50 {
		toAgentR, toAgentW := io.Pipe()
		fromAgentR, fromAgentW := io.Pipe()
		go answersLoadThenSpeaks(toAgentR, fromAgentW)
		var out bytes.Buffer
		term := view.NewTerminal(&out, false)
		cfg := Config{
			Term: term, Timeout: 30 * time.Second, Abort: func() { toAgentR.Close(); fromAgentW.Close() },
			Requests: slices.Values([]Request{{Method: acp.AgentMethodSessionLoad, SessionID: "s"}}),
		}
		if _, err := Run(context.Background(), cfg, toAgentW, fromAgentR); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		term.Flush()
		text := out.String()
		end, after := strings.Index(text, "── end of history ──"), strings.Index(text, "after the load")
		if end < 0 || after < end {
			t.Fatalf("run %d: the frame after the load's response was shown before the load ended:\n%s", i, text)
		}
	}
}
