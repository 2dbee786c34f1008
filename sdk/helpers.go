package acp

// Constructors for the values agents send most: content blocks, tool-call
// content and session updates. Each fills the variant's discriminator, so a
// value built here marshals without further setup.

// Ptr returns a pointer to a copy of v; handy for optional fields.
func Ptr[T any](v T) *T { return &v }

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Text: &ContentBlockText{Type: "text", Text: text}}
}

// ImageBlock returns an image content block with base64 data.
func ImageBlock(data string, mimeType string) ContentBlock {
	return ContentBlock{Image: &ContentBlockImage{Type: "image", Data: data, MimeType: mimeType}}
}

// AudioBlock returns an audio content block with base64 data.
func AudioBlock(data string, mimeType string) ContentBlock {
	return ContentBlock{Audio: &ContentBlockAudio{Type: "audio", Data: data, MimeType: mimeType}}
}

// ResourceLinkBlock returns a content block linking to a resource by URI.
func ResourceLinkBlock(name string, uri string) ContentBlock {
	return ContentBlock{ResourceLink: &ContentBlockResourceLink{Type: "resource_link", Name: name, Uri: uri}}
}

// ResourceBlock returns a content block embedding a resource.
func ResourceBlock(res EmbeddedResourceResource) ContentBlock {
	return ContentBlock{Resource: &ContentBlockResource{Type: "resource", Resource: res}}
}

// ToolContent wraps a content block as tool-call content.
func ToolContent(block ContentBlock) ToolCallContent {
	return ToolCallContent{Content: &ToolCallContentContent{Type: "content", Content: block}}
}

// ToolDiffContent returns a diff of the file at path. The optional oldText
// (its first value) is the previous content; without it the file is new.
func ToolDiffContent(path string, newText string, oldText ...string) ToolCallContent {
	d := &ToolCallContentDiff{Type: "diff", Path: path, NewText: newText}
	if len(oldText) > 0 {
		d.OldText = Ptr(oldText[0])
	}
	return ToolCallContent{Diff: d}
}

// ToolTerminalRef embeds the terminal with the given id in a tool call.
func ToolTerminalRef(terminalID string) ToolCallContent {
	return ToolCallContent{Terminal: &ToolCallContentTerminal{Type: "terminal", TerminalId: terminalID}}
}

// UpdateUserMessage returns a user_message_chunk update.
func UpdateUserMessage(content ContentBlock) SessionUpdate {
	return SessionUpdate{UserMessageChunk: &SessionUpdateUserMessageChunk{SessionUpdate: "user_message_chunk", Content: content}}
}

// UpdateUserMessageText returns a user_message_chunk update holding text.
func UpdateUserMessageText(text string) SessionUpdate { return UpdateUserMessage(TextBlock(text)) }

// UpdateAgentMessage returns an agent_message_chunk update.
func UpdateAgentMessage(content ContentBlock) SessionUpdate {
	return SessionUpdate{AgentMessageChunk: &SessionUpdateAgentMessageChunk{SessionUpdate: "agent_message_chunk", Content: content}}
}

// UpdateAgentMessageText returns an agent_message_chunk update holding text.
func UpdateAgentMessageText(text string) SessionUpdate { return UpdateAgentMessage(TextBlock(text)) }

// UpdateAgentThought returns an agent_thought_chunk update.
func UpdateAgentThought(content ContentBlock) SessionUpdate {
	return SessionUpdate{AgentThoughtChunk: &SessionUpdateAgentThoughtChunk{SessionUpdate: "agent_thought_chunk", Content: content}}
}

// UpdateAgentThoughtText returns an agent_thought_chunk update holding text.
func UpdateAgentThoughtText(text string) SessionUpdate { return UpdateAgentThought(TextBlock(text)) }

// UpdatePlan returns a plan update with the given entries.
func UpdatePlan(entries ...PlanEntry) SessionUpdate {
	return SessionUpdate{Plan: &SessionUpdatePlan{SessionUpdate: "plan", Entries: entries}}
}

// ToolCallStartOpt adjusts the tool call StartToolCall builds.
type ToolCallStartOpt func(*SessionUpdateToolCall)

// StartToolCall returns a tool_call update announcing a new tool call.
func StartToolCall(id ToolCallId, title string, opts ...ToolCallStartOpt) SessionUpdate {
	tc := &SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: id, Title: title}
	for _, opt := range opts {
		opt(tc)
	}
	return SessionUpdate{ToolCall: tc}
}

// WithStartKind sets the tool call's kind.
func WithStartKind(k ToolKind) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) { tc.Kind = k }
}

// WithStartStatus sets the tool call's status.
func WithStartStatus(s ToolCallStatus) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) { tc.Status = s }
}

// WithStartContent sets the tool call's content.
func WithStartContent(c []ToolCallContent) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) { tc.Content = c }
}

// WithStartLocations sets the files the tool call touches. With exactly one
// location with a non-empty path it also records the path as rawInput.path: as the whole rawInput
// when none is set yet, or added to a map rawInput that has no "path".
func WithStartLocations(l []ToolCallLocation) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) {
		tc.Locations = l
		if len(l) != 1 || l[0].Path == "" {
			return
		}
		switch in := tc.RawInput.(type) {
		case nil:
			tc.RawInput = map[string]any{"path": l[0].Path}
		case map[string]any:
			if _, ok := in["path"]; !ok {
				in["path"] = l[0].Path
			}
		}
	}
}

// WithStartRawInput sets the tool call's raw input.
func WithStartRawInput(v any) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) { tc.RawInput = v }
}

// WithStartRawOutput sets the tool call's raw output.
func WithStartRawOutput(v any) ToolCallStartOpt {
	return func(tc *SessionUpdateToolCall) { tc.RawOutput = v }
}

// StartReadToolCall announces reading the file at path: kind read, status
// pending, one location and rawInput {"path": path}. opts apply last.
func StartReadToolCall(id ToolCallId, title string, path string, opts ...ToolCallStartOpt) SessionUpdate {
	base := []ToolCallStartOpt{
		WithStartKind(ToolKindRead),
		WithStartStatus(ToolCallStatusPending),
		WithStartRawInput(map[string]any{"path": path}),
		WithStartLocations([]ToolCallLocation{{Path: path}}),
	}
	return StartToolCall(id, title, append(base, opts...)...)
}

// StartEditToolCall announces editing the file at path: kind edit, status
// pending, one location and rawInput {"content": content, "path": path}.
// opts apply last.
func StartEditToolCall(id ToolCallId, title string, path string, content any, opts ...ToolCallStartOpt) SessionUpdate {
	base := []ToolCallStartOpt{
		WithStartKind(ToolKindEdit),
		WithStartStatus(ToolCallStatusPending),
		WithStartLocations([]ToolCallLocation{{Path: path}}),
		WithStartRawInput(map[string]any{"content": content, "path": path}),
	}
	return StartToolCall(id, title, append(base, opts...)...)
}

// ToolCallUpdateOpt adjusts the update UpdateToolCall builds.
type ToolCallUpdateOpt func(*SessionToolCallUpdate)

// UpdateToolCall returns a tool_call_update for the tool call id; only the
// fields set by opts are sent.
func UpdateToolCall(id ToolCallId, opts ...ToolCallUpdateOpt) SessionUpdate {
	u := &SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: id}
	for _, opt := range opts {
		opt(u)
	}
	return SessionUpdate{ToolCallUpdate: u}
}

// WithUpdateTitle sets the new title.
func WithUpdateTitle(t string) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.Title = Ptr(t) }
}

// WithUpdateKind sets the new kind.
func WithUpdateKind(k ToolKind) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.Kind = Ptr(k) }
}

// WithUpdateStatus sets the new status.
func WithUpdateStatus(s ToolCallStatus) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.Status = Ptr(s) }
}

// WithUpdateContent replaces the tool call's content.
func WithUpdateContent(c []ToolCallContent) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.Content = c }
}

// WithUpdateLocations replaces the tool call's locations.
func WithUpdateLocations(l []ToolCallLocation) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.Locations = l }
}

// WithUpdateRawInput sets the new raw input.
func WithUpdateRawInput(v any) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.RawInput = v }
}

// WithUpdateRawOutput sets the new raw output.
func WithUpdateRawOutput(v any) ToolCallUpdateOpt {
	return func(u *SessionToolCallUpdate) { u.RawOutput = v }
}
