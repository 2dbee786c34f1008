package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

// CapturedRequests are the client requests a replay sends, in the order
// the capture recorded them: each session/new, session/load,
// session/resume and session/prompt (with its recorded session id and
// text), a prompt followed by a recorded session/cancel marked to cancel.
// A prompt the client sent before the agent had answered an earlier one
// is queued behind it (Request.Queue), as it was sent. A capture that
// opens no session first gets a session/new, and one without a prompt
// gets one prompt ("replay"), so a capture of agent notifications alone
// replays as one turn.
func CapturedRequests(c *capture.Capture) []Request {
	var out []Request
	prompted := false
	unanswered := map[string]bool{} // recorded prompt ids not yet answered
	for _, e := range c.Entries {
		if e.From != capture.FromClient {
			if m, err := capture.ParseMessage(e.Msg); err == nil && m.IsResponse() {
				delete(unanswered, capture.IDKey(m.ID))
			}
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				SessionID string `json:"sessionId"`
				Prompt    []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"prompt"`
			} `json:"params"`
		}
		if json.Unmarshal(e.Msg, &m) != nil {
			continue
		}
		switch m.Method {
		case acp.AgentMethodSessionNew:
			out = append(out, Request{Method: m.Method})
		case acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume:
			out = append(out, Request{Method: m.Method, SessionID: m.Params.SessionID})
		case acp.AgentMethodSessionPrompt:
			if len(out) == 0 {
				out = append(out, Request{Method: acp.AgentMethodSessionNew})
			}
			var parts []string
			for _, b := range m.Params.Prompt {
				if b.Type == "text" && b.Text != "" {
					parts = append(parts, b.Text)
				}
			}
			text := strings.Join(parts, "\n")
			if text == "" {
				text = "replay"
			}
			req := Request{Method: m.Method, SessionID: m.Params.SessionID, Text: text}
			if n := len(out); n > 0 && out[n-1].Method == acp.AgentMethodSessionPrompt && len(unanswered) > 0 && len(out[n-1].Queue) < MaxQueued {
				out[n-1].Queue = append(out[n-1].Queue, req)
			} else {
				out = append(out, req)
			}
			if len(m.ID) > 0 && len(unanswered) < maxUnanswered {
				unanswered[capture.IDKey(m.ID)] = true
			}
			prompted = true
		case acp.AgentMethodSessionCancel:
			if n := len(out); n > 0 && out[n-1].Method == acp.AgentMethodSessionPrompt && len(m.ID) == 0 {
				last := &out[n-1]
				if q := len(last.Queue); q > 0 {
					last = &last.Queue[q-1]
				}
				last.Cancel = true
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Request{Method: acp.AgentMethodSessionNew})
	}
	if !prompted {
		out = append(out, Request{Method: acp.AgentMethodSessionPrompt, Text: "replay"})
	}
	return out
}

// MaxQueued bounds the prompts queued behind one prompt (Request.Queue):
// run --queue refuses more, and in a replay a capture with more prompts
// open at once (hostile, or cut) has the next one sent after the span's
// answers.
const MaxQueued = 64

// maxUnanswered bounds the recorded prompt ids CapturedRequests remembers
// as open.
const maxUnanswered = 1024

// replayClock dates a replay's cards with the capture's own clock: the
// replay's start plus the recorded offset of the session/update the
// client handles (the scripted agent's k-th update is the client's k-th:
// both keep the wire order).
type replayClock struct {
	base    time.Time
	agent   *replay.Agent
	handled atomic.Int64 // updates handed to the tracker so far
	offset  atomic.Int64 // milliseconds of the latest of them
}

// recordedClock returns the clock of a replay of agent starting at base.
func recordedClock(base time.Time, agent *replay.Agent) *replayClock {
	return &replayClock{base: base, agent: agent}
}

// next is called before each session/update is handed to the tracker.
func (c *replayClock) next() {
	k := c.handled.Add(1) - 1
	if ms, ok := c.agent.UpdateTime(int(k)); ok {
		c.offset.Store(ms)
	}
}

// now is the recorded time of the update being handled.
func (c *replayClock) now() time.Time {
	return c.base.Add(time.Duration(c.offset.Load()) * time.Millisecond)
}

// Replay plays c's agent side against the live client stack, sending the
// capture's client requests (CapturedRequests) unless cfg.Requests is
// set. Events are dated with the capture's own clock (cfg.Clock: the
// replay's start plus the recorded offset of the session/update being
// handled).
func Replay(ctx context.Context, c *capture.Capture, cfg Config) (Result, error) {
	clientToAgentR, clientToAgentW := io.Pipe()
	agentToClientR, agentToClientW := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agent := replay.NewAgent(c)
	clock := recordedClock(time.Now(), agent)
	cfg.OnUpdate = clock.next
	if cfg.Requests == nil {
		cfg.Requests = slices.Values(CapturedRequests(c))
	}
	cfg.Clock = clock.now
	// The export's turn and permission times come from the same clock.
	cfg.Traces.SetClock(clock.now)
	defer cfg.Traces.SetClock(nil)
	if c, ok := cfg.Turns.(clockSetter); ok {
		c.SetClock(clock.now)
		defer c.SetClock(nil)
	}
	served := make(chan error, 1)
	go func() {
		err := agent.Serve(ctx, clientToAgentR, agentToClientW)
		agentToClientW.CloseWithError(io.EOF)
		served <- err
	}()
	// Aborting the scripted agent ends it and both pipes, so nothing stays
	// blocked on them.
	cfg.Abort = func() {
		cancel()
		clientToAgentR.CloseWithError(io.ErrClosedPipe)
		agentToClientW.CloseWithError(io.ErrClosedPipe)
	}
	res, err := Run(ctx, cfg, clientToAgentW, agentToClientR)
	clientToAgentW.Close()
	cancel()
	if serr := <-served; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = fmt.Errorf("%w: replay: %v", ErrTurn, serr)
	}
	return res, err
}

// clockSetter is a turn observer whose times can come from a clock of the
// caller's (the store sink: a replay's turns in the capture's times, as
// its tool calls are).
type clockSetter interface{ SetClock(now func() time.Time) }
