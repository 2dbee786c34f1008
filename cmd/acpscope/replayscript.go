package main

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

// capturedRequests are the client requests a replay sends, in the order
// the capture recorded them: each session/new, session/load,
// session/resume and session/prompt (with its recorded session id and
// text), a prompt followed by a recorded session/cancel marked to cancel.
// A capture that opens no session first gets a session/new, and one
// without a prompt gets one prompt ("replay"), so a capture of agent
// notifications alone replays as one turn.
func capturedRequests(c *capture.Capture) []request {
	var out []request
	prompted := false
	for _, e := range c.Entries {
		if e.From != capture.FromClient {
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
			out = append(out, request{method: m.Method})
		case acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume:
			out = append(out, request{method: m.Method, sessionID: m.Params.SessionID})
		case acp.AgentMethodSessionPrompt:
			if len(out) == 0 {
				out = append(out, request{method: acp.AgentMethodSessionNew})
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
			out = append(out, request{method: m.Method, sessionID: m.Params.SessionID, text: text})
			prompted = true
		case acp.AgentMethodSessionCancel:
			if n := len(out); n > 0 && out[n-1].method == acp.AgentMethodSessionPrompt && len(m.ID) == 0 {
				out[n-1].cancel = true
			}
		}
	}
	if len(out) == 0 {
		out = append(out, request{method: acp.AgentMethodSessionNew})
	}
	if !prompted {
		out = append(out, request{method: acp.AgentMethodSessionPrompt, text: "replay"})
	}
	return out
}

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
