package adapter

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"
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
//
// A background child's text arrives as the parent's agent_message_chunk
// too, untagged, whenever the child answers (after the receipt, even after
// the parent's own text). The parent reads the answer with a read_agent
// tool call (kind read, rawInput.agent_id, since_turn); its completion's
// rawOutput.content is a status line ("Agent is idle (waiting for
// messages). agent_id: …, status: idle, …") and the child's turns, each
// under a "[Turn N]" line. That answer becomes the child's card's result
// (earlier turns its earlier results) and its status word the payload
// status; until it is read, the parent's agent text may be the child's, so
// a consumer holds it (Tracker.HoldText, Tracker.HeldChildText).

// Copilot counters.
const (
	// CounterCopilotUnattributed counts child tool calls whose agent id
	// matches no task: unknown, and several foreground tasks running.
	CounterCopilotUnattributed = "copilot_unattributed_child"
	// CounterCopilotAgentsEvicted counts agent ids forgotten by the bound.
	CounterCopilotAgentsEvicted = "copilot_agents_evicted"
	// CounterCopilotReadsEvicted counts read_agent calls forgotten by the
	// bound before they completed.
	CounterCopilotReadsEvicted = "copilot_reads_evicted"
)

// MaxCopilotAgents bounds the agent ids remembered per session, and the
// read_agent calls awaiting their completion.
const MaxCopilotAgents = 256

// MaxCopilotAnswers bounds the background children's answers remembered
// per session for judging held text (Tracker.HeldChildText); an answer
// over MaxHeldAnswerBytes is not remembered (held text is released before
// it could match).
const (
	MaxCopilotAnswers  = 16
	MaxHeldAnswerBytes = 64 << 10
)

// copilotReadTool is the title of the tool call that reads a background
// agent's answer.
const copilotReadTool = "read_agent"

// valueCopilotTurn is the card value holding the last read_agent turn
// number applied to a background child's card.
const valueCopilotTurn = "copilot.turn"

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

// The Copilot dialect judges a background child's text.
var _ ChildTextHolder = (*copilotDialect)(nil)

// copilotSession is what one session's tasks told about their agents.
type copilotSession struct {
	agents  map[string]string // agent id → task tool call id
	order   []string          // agent ids in the order learned, for the bound
	running []string          // foreground tasks not terminal, in launch order
	// unread are the background agents whose receipt was seen and whose
	// answer was not read yet (a subset of agents).
	unread map[string]bool
	// reads are the read_agent calls not completed: tool call id → agent
	// id; readOrder keeps them in the order seen, for the bound.
	reads     map[string]string
	readOrder []string
	// answers are the answers read, oldest first, at most
	// MaxCopilotAnswers.
	answers []ChildAnswer
}

// Name returns "copilot".
func (d *copilotDialect) Name() string { return DialectCopilot }

func (d *copilotDialect) session(id string) *copilotSession {
	s := d.sessions[id]
	if s == nil {
		s = &copilotSession{agents: map[string]string{}, unread: map[string]bool{}, reads: map[string]string{}}
		d.sessions[id] = s
	}
	return s
}

// Prepare nests a child's tool call under its task: by the agent id
// learned before, else under the only running foreground task without an
// agent id (which then takes it).
// A read_agent call naming a known agent gives that agent's card the
// answer it reads.
func (d *copilotDialect) Prepare(tx *Tx, f *ToolFrame) bool {
	d.followRead(tx, f)
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
		delete(s.unread, s.order[0])
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
			if task.ResultText == "" {
				s.unread[m[1]] = true
			}
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

// followRead remembers a read_agent call naming a known agent, and on its
// completion applies what it read to the agent's card.
func (d *copilotDialect) followRead(tx *Tx, f *ToolFrame) {
	s := d.sessions[f.SessionID]
	if s == nil {
		return
	}
	if f.Create && f.Title != nil && *f.Title == copilotReadTool {
		if agent := f.Read.String(f.RawInputMap(), "agent_id"); agent != "" && s.agents[agent] != "" {
			if _, ok := s.reads[f.ToolCallID]; !ok {
				s.readOrder = append(s.readOrder, f.ToolCallID)
			}
			s.reads[f.ToolCallID] = agent
			for len(s.readOrder) > MaxCopilotAgents {
				if _, ok := s.reads[s.readOrder[0]]; ok {
					delete(s.reads, s.readOrder[0])
					tx.Count(CounterCopilotReadsEvicted, 1)
				}
				s.readOrder = s.readOrder[1:]
			}
		}
	}
	agent, ok := s.reads[f.ToolCallID]
	if !ok {
		return
	}
	st, _ := MapACPToolStatus(f.Status)
	if !st.Terminal() {
		return
	}
	delete(s.reads, f.ToolCallID)
	s.readOrder = slices.DeleteFunc(s.readOrder, func(x string) bool { return x == f.ToolCallID })
	if st != ToolStatusComplete {
		return
	}
	text := f.Read.String(f.RawOutputMap(), "content")
	if text == "" {
		text = firstContentText(f.Content)
	}
	read, ok := ParseCopilotAgentRead(text)
	if !ok || read.AgentID != agent {
		return
	}
	c, held := tx.Card(f.SessionID, s.agents[agent])
	if !held || !c.IsSubagent() {
		return
	}
	if d.applyRead(tx, s, c, read) {
		tx.Emit(EventToolUpdate, c)
	}
	if len(read.Turns) > 0 {
		delete(s.unread, agent)
	}
}

// applyRead gives a card the turns a read_agent call read that it does not
// hold yet (the last one its result, those before it earlier results) and
// the agent's status word; the tool status stays as it is. It reports
// whether the payload changed.
func (d *copilotDialect) applyRead(tx *Tx, s *copilotSession, c *Card, read CopilotAgentRead) bool {
	task := c.Task()
	changed := OverwriteString(&task.Status, read.Status)
	last, seen := c.Value(valueCopilotTurn).(int)
	for _, turn := range read.Turns {
		if (seen && turn.N <= last) || turn.Text == "" {
			continue
		}
		replaceResult(tx, task, turn.Text)
		if OverwriteString(&task.ResultText, turn.Text) {
			task.ResultBytes = 0
			changed = true
		}
		last, seen = turn.N, true
		c.SetValue(valueCopilotTurn, last)
		if len(turn.Text) <= MaxHeldAnswerBytes {
			s.answers = append(s.answers, ChildAnswer{ToolCallID: c.ToolCallID(), Text: turn.Text})
			if n := len(s.answers) - MaxCopilotAnswers; n > 0 {
				s.answers = slices.Delete(s.answers, 0, n)
			}
		}
	}
	return changed
}

// firstContentText returns the text of a tool call's first text content.
func firstContentText(content []acp.ToolCallContent) string {
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			return c.Content.Content.Text.Text
		}
	}
	return ""
}

// CopilotAgentRead is what a Copilot read_agent call returned.
type CopilotAgentRead struct {
	// AgentID is the agent the status line names.
	AgentID string
	// Status is the agent's status word ("idle", "running", "completed",
	// "failed", …), "" when the line has none.
	Status string
	// Turns are the agent's turns the call returned, in order.
	Turns []CopilotTurn
}

// CopilotTurn is one turn of a Copilot background agent.
type CopilotTurn struct {
	// N is the turn's number.
	N int
	// Text is the turn's text, whitespace-trimmed.
	Text string
}

// copilotReadField matches "key: value" in read_agent's status line.
var copilotReadField = regexp.MustCompile(`(?:^|[ (.,])(agent_id|status): ([A-Za-z0-9_-]+)`)

// copilotTurnLine matches the line that opens a turn: "[Turn N]".
var copilotTurnLine = regexp.MustCompile(`^\[Turn (\d{1,9})\]$`)

// ParseCopilotAgentRead reads the content of a completed read_agent call:
// a first line naming the agent ("… agent_id: ID, …, status: WORD, …"),
// then each turn under a "[Turn N]" line. ok is false without an agent id
// on the first line.
func ParseCopilotAgentRead(text string) (read CopilotAgentRead, ok bool) {
	header, body, _ := strings.Cut(text, "\n")
	for _, m := range copilotReadField.FindAllStringSubmatch(header, -1) {
		switch {
		case m[1] == "agent_id" && read.AgentID == "":
			read.AgentID = m[2]
		case m[1] == "status" && read.Status == "":
			read.Status = m[2]
		}
	}
	if read.AgentID == "" {
		return CopilotAgentRead{}, false
	}
	var turn *CopilotTurn
	var lines []string
	end := func() {
		if turn != nil {
			turn.Text = strings.TrimSpace(strings.Join(lines, "\n"))
			read.Turns = append(read.Turns, *turn)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if m := copilotTurnLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			end()
			n, _ := strconv.Atoi(m[1])
			turn, lines = &CopilotTurn{N: n}, nil
			continue
		}
		lines = append(lines, line)
	}
	end()
	return read, true
}

// HoldText: while a background child of the session runs unread, the
// session's agent text may be its answer.
func (d *copilotDialect) HoldText(_ *Tx, sessionID string) bool {
	s := d.sessions[sessionID]
	return s != nil && len(s.unread) > 0
}

// ChildAnswers returns the answers read in the session.
func (d *copilotDialect) ChildAnswers(_ *Tx, sessionID string) []ChildAnswer {
	if s := d.sessions[sessionID]; s != nil {
		return slices.Clone(s.answers)
	}
	return nil
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
