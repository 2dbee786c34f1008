package adapter

import (
	"regexp"
	"slices"
)

// GitHub Copilot (copilot --acp --stdio): a subagent is the task tool. Its
// tool call is titled with the description, kind "other", with rawInput
// {description, prompt, agent_type, name} (plus mode "background" for a
// background launch) and no _meta; the completion's rawOutput.content is
// the answer, or for a background launch a receipt naming the agent id.
// While a foreground task runs, the parent waits: the child's own tool
// calls arrive in the parent's session tagged
// _meta["github.com/copilot"].agentId, and the child's final text arrives
// as the parent's agent_message_chunk (see Tracker.ChildText).

// Copilot counters.
const (
	// CounterCopilotUnattributed counts child tool calls whose agent id
	// matches no task: unknown, and several foreground tasks running.
	CounterCopilotUnattributed = "copilot_unattributed_child"
	// CounterCopilotAgentsEvicted counts agent ids forgotten by the bound.
	CounterCopilotAgentsEvicted = "copilot_agents_evicted"
)

// MaxCopilotAgents bounds the agent ids remembered per session.
const MaxCopilotAgents = 256

// copilotMetaKey is the _meta key of Copilot's child tool calls.
const copilotMetaKey = "github.com/copilot"

// copilotReceipt matches the receipt of a background launch and captures
// the agent id.
var copilotReceipt = regexp.MustCompile(`^Agent started in background with agent_id: ([^\s.,;]+)`)

// copilotDialect is the Copilot dialect for one connection.
type copilotDialect struct {
	Base
	sessions map[string]*copilotSession
}

// copilotSession is what one session's tasks told about their agents.
type copilotSession struct {
	agents  map[string]string // agent id → task tool call id
	order   []string          // agent ids in the order learned, for the bound
	running []string          // foreground tasks not terminal, in launch order
}

// Name returns "copilot".
func (d *copilotDialect) Name() string { return DialectCopilot }

func (d *copilotDialect) session(id string) *copilotSession {
	s := d.sessions[id]
	if s == nil {
		s = &copilotSession{agents: map[string]string{}}
		d.sessions[id] = s
	}
	return s
}

// Prepare nests a child's tool call under its task: by the agent id
// learned before, else under the only running foreground task without an
// agent id (which then takes it).
func (d *copilotDialect) Prepare(tx *Tx, f *ToolFrame) bool {
	agent := f.Read.String(f.Read.Map(f.Meta, copilotMetaKey), "agentId")
	if agent == "" {
		return true
	}
	s := d.session(f.SessionID)
	if task, ok := s.agents[agent]; ok {
		f.Parent = task
		return true
	}
	var free []*Card
	for _, id := range s.running {
		if c, ok := tx.Card(f.SessionID, id); ok && c.IsSubagent() && c.Task().AgentID == "" {
			free = append(free, c)
		}
	}
	if len(free) != 1 {
		tx.Count(CounterCopilotUnattributed, 1)
		return true
	}
	c := free[0]
	c.Task().AgentID = agent
	d.learn(tx, s, agent, c.ToolCallID())
	tx.Emit(EventToolUpdate, c)
	f.Parent = c.ToolCallID()
	return true
}

// learn remembers that agent runs the task toolCallID.
func (d *copilotDialect) learn(tx *Tx, s *copilotSession, agent, toolCallID string) {
	if _, ok := s.agents[agent]; !ok {
		s.order = append(s.order, agent)
	}
	s.agents[agent] = toolCallID
	for len(s.order) > MaxCopilotAgents {
		delete(s.agents, s.order[0])
		s.order = s.order[1:]
		tx.Count(CounterCopilotAgentsEvicted, 1)
	}
}

// Recognize makes a task tool call a subagent: kind other (or not sent)
// and a rawInput with string agent_type and prompt.
func (d *copilotDialect) Recognize(_ *Tx, _ *Card, f *ToolFrame) bool {
	if f.Kind != "" && f.Kind != "other" {
		return false
	}
	in := f.RawInputMap()
	_, typed := in["agent_type"].(string)
	_, prompted := in["prompt"].(string)
	return typed && prompted
}

// Apply fills the type, the async mark and the result, and follows which
// foreground tasks are running.
func (d *copilotDialect) Apply(tx *Tx, c *Card, f *ToolFrame) {
	task := c.Task()
	r := f.Read
	in := f.RawInputMap()
	FillString(&task.SubagentType, r.String(in, "agent_type"))
	SetSticky(&task.IsAsync, r.String(in, "mode") == "background")
	s := d.session(f.SessionID)
	if content := r.String(f.RawOutputMap(), "content"); content != "" {
		if m := copilotReceipt.FindStringSubmatch(content); m != nil {
			SetSticky(&task.IsAsync, true)
			OverwriteString(&task.AgentID, m[1])
			d.learn(tx, s, m[1], c.ToolCallID())
		} else if f.Status == "completed" {
			FillString(&task.ResultText, content)
		}
	}
	id := c.ToolCallID()
	st, _ := MapACPToolStatus(f.Status)
	switch {
	case st.Terminal() || c.Terminal() || task.IsAsync:
		s.running = slices.DeleteFunc(s.running, func(x string) bool { return x == id })
	case !slices.Contains(s.running, id):
		s.running = append(s.running, id)
	}
}

// ChildText: while foreground tasks run, the parent waits on them, so its
// agent text is a child's.
func (d *copilotDialect) ChildText(tx *Tx, sessionID string) (string, bool) {
	s := d.sessions[sessionID]
	if s == nil {
		return "", false
	}
	var live []string
	for _, id := range s.running {
		if c, ok := tx.Card(sessionID, id); ok && !c.Terminal() {
			live = append(live, id)
		}
	}
	s.running = live
	switch len(live) {
	case 0:
		return "", false
	case 1:
		return live[0], true
	}
	return "", true
}

// PromptEnded forgets the running tasks of the turn (a foreground task
// does not outlive it).
func (d *copilotDialect) PromptEnded(_ *Tx, sessionID string) {
	if s := d.sessions[sessionID]; s != nil {
		s.running = nil
	}
}

// SessionCleared forgets the cleared sessions.
func (d *copilotDialect) SessionCleared(_ *Tx, sessionID string) {
	if sessionID == "" {
		d.sessions = map[string]*copilotSession{}
		return
	}
	delete(d.sessions, sessionID)
}

func init() {
	Register(DialectCopilot, func() Dialect { return &copilotDialect{sessions: map[string]*copilotSession{}} })
}
