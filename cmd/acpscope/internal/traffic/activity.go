package traffic

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// The bounds of an Activity: what one session's latest messages said.
const (
	// ActivityFrames is how many of the session's latest kept messages
	// Activity reads: a tool call or permission request older than them
	// is not shown.
	ActivityFrames = 500
	// MaxActivityText bounds the latest message's text (its end is kept).
	MaxActivityText = 2000
	// MaxActivityCalls bounds the tool calls shown (the latest ones), and
	// MaxActivityPermissions the pending permission requests.
	MaxActivityCalls       = 20
	MaxActivityPermissions = 20
)

// ActivityCall is one tool call of a session as its latest messages left
// it, agent text sanitised (safetext.Text).
type ActivityCall struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// ActivityPermission is a permission request of the session not answered
// (yet) in the kept messages.
type ActivityPermission struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Activity is what a session's latest kept messages (at most
// ActivityFrames of them) say of it: when it last spoke, its latest
// agent message, its tool calls and its pending permission requests.
// Every agent text is sanitised (safetext.Lines for the message,
// safetext.Text for the rest).
type Activity struct {
	// Seen reports that the Log keeps a message of the session.
	Seen bool `json:"seen"`
	// Last is when the session's latest kept message passed.
	Last time.Time `json:"last_activity"`
	// Message is the latest agent message (agent_message_chunk runs, or a
	// session_message), its last MaxActivityText bytes.
	Message string `json:"latest_message"`
	// Calls are the tool calls seen, oldest first (the latest
	// MaxActivityCalls).
	Calls []ActivityCall `json:"tool_calls"`
	// Permissions are the requests not answered, oldest first.
	Permissions []ActivityPermission `json:"permissions"`
	// Cancelled is when the client last sent session/cancel for it (zero:
	// never, in the kept messages).
	Cancelled time.Time `json:"cancelled_at"`
}

// activityMessage is what Activity decodes of a kept message.
type activityMessage struct {
	Params struct {
		Update struct {
			SessionUpdate string          `json:"sessionUpdate"`
			ToolCallID    string          `json:"toolCallId"`
			Title         *string         `json:"title"`
			Status        *string         `json:"status"`
			Content       json.RawMessage `json:"content"`
			MessageID     string          `json:"messageId"`
		} `json:"update"`
		ToolCall struct {
			ToolCallID string  `json:"toolCallId"`
			Title      *string `json:"title"`
		} `json:"toolCall"`
	} `json:"params"`
}

// textBlock is a content block's text (other blocks have none).
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Activity reads what the session's latest kept messages say of it.
func (l *Log) Activity(session string) Activity {
	q := Filter{Session: session}
	p := l.Since(l.TailStart(q, ActivityFrames), q, ActivityFrames)
	return activityOf(p.Frames)
}

// activityOf folds a session's messages, oldest first, into its Activity.
func activityOf(frames []Frame) Activity {
	a := Activity{Calls: []ActivityCall{}, Permissions: []ActivityPermission{}}
	var msg strings.Builder
	msgID, lastUpdate := "", ""
	calls := map[string]int{}   // id → index in a.Calls
	pending := map[string]int{} // raw request id → index in a.Permissions
	var answered []bool
	// Only the messages that can change what is shown are decoded: the
	// tool calls, the permission requests, and the message updates of the
	// latest run of them (its start found from the routing facts alone).
	latestRun := len(frames)
	for latestRun > 0 && !messageUpdate(&frames[latestRun-1]) {
		latestRun--
	}
	for latestRun > 0 && messageUpdate(&frames[latestRun-1]) {
		latestRun--
	}
	for i := range frames {
		f := &frames[i]
		a.Seen, a.Last = true, f.At
		if f.Kind == "invalid" {
			continue // not JSON-RPC: only its time counts
		}
		var m activityMessage
		if worthDecoding(f, i >= latestRun) && json.Unmarshal([]byte(f.Text), &m) != nil {
			continue // cut: only its time counts
		}
		switch {
		case f.Method == "session/update" && f.Kind == "notification":
			u := m.Params.Update
			switch u.SessionUpdate {
			case "agent_message_chunk", "session_message_chunk":
				if lastUpdate != u.SessionUpdate || u.MessageID != msgID {
					msg.Reset()
				}
				var b textBlock
				if json.Unmarshal(u.Content, &b) == nil {
					msg.WriteString(keepEnd(b.Text, MaxActivityText))
				}
				msgID = u.MessageID
			case "session_message":
				var blocks []textBlock
				if json.Unmarshal(u.Content, &blocks) == nil {
					msg.Reset()
					for _, b := range blocks {
						msg.WriteString(keepEnd(b.Text, MaxActivityText))
					}
					msgID = u.MessageID
				}
			case "tool_call", "tool_call_update":
				if u.ToolCallID == "" {
					break
				}
				k, ok := calls[u.ToolCallID]
				if !ok {
					k = len(a.Calls)
					calls[u.ToolCallID] = k
					a.Calls = append(a.Calls, ActivityCall{ID: safetext.Text(fact(u.ToolCallID))})
				}
				if u.Title != nil {
					a.Calls[k].Title = safetext.Text(fact(*u.Title))
				}
				if u.Status != nil {
					a.Calls[k].Status = safetext.Text(fact(*u.Status))
				}
			}
			lastUpdate = u.SessionUpdate
			if msg.Len() > 2*MaxActivityText {
				s := keepEnd(msg.String(), MaxActivityText)
				msg.Reset()
				msg.WriteString(s)
			}
		case f.Method == "session/request_permission" && f.Kind == "request" && f.From == string(capture.FromAgent):
			title := ""
			if t := m.Params.ToolCall.Title; t != nil {
				title = *t
			}
			if _, dup := pending[f.ID]; !dup {
				pending[f.ID] = len(a.Permissions)
				a.Permissions = append(a.Permissions, ActivityPermission{ID: safetext.Text(f.ID), Title: safetext.Text(fact(title))})
				answered = append(answered, false)
			}
		case f.Method == "session/request_permission" && (f.Kind == "response" || f.Kind == "error") && f.From == string(capture.FromClient):
			if k, ok := pending[f.ID]; ok {
				answered[k] = true
				delete(pending, f.ID)
			}
		case f.Method == "session/cancel" && f.From == string(capture.FromClient):
			a.Cancelled = f.At
		}
	}
	a.Message = safetext.Lines(keepEnd(msg.String(), MaxActivityText))
	open := a.Permissions[:0]
	for k, p := range a.Permissions {
		if !answered[k] {
			open = append(open, p)
		}
	}
	a.Permissions = open[:min(len(open), MaxActivityPermissions):min(len(open), MaxActivityPermissions)]
	if n := len(a.Calls); n > MaxActivityCalls {
		a.Calls = a.Calls[n-MaxActivityCalls:]
	}
	return a
}

// messageUpdate reports whether f is a session/update of a message
// (agent_message_chunk, session_message, session_message_chunk).
func messageUpdate(f *Frame) bool {
	switch f.Update {
	case "agent_message_chunk", "session_message", "session_message_chunk":
		return f.Method == "session/update"
	}
	return false
}

// worthDecoding reports whether f can change an Activity: a tool call
// update, a permission request from the agent, or (inLatestRun) a message
// update of the latest run of them. The others count by their routing
// facts alone (their time, an answer's id, a cancel).
func worthDecoding(f *Frame, inLatestRun bool) bool {
	switch {
	case f.Method == "session/update":
		return f.Update == "tool_call" || f.Update == "tool_call_update" || inLatestRun && messageUpdate(f)
	case f.Method == "session/request_permission":
		return f.Kind == "request"
	}
	return false
}

// keepEnd is at most the last n bytes of s, cut at a rune boundary.
func keepEnd(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
