package traces

import "strings"

// TurnObserver is what sees a connection's turns, its agent and its
// permission requests beside its events: the export (*Exporter) and the
// store (the store sink keeps them for ExportStored). A nil *Exporter is
// one that does nothing.
type TurnObserver interface {
	// Initialized is the agent's initialize answer (agentInfo).
	Initialized(name, version string)
	// TurnStarted opens the session's next turn (Exporter.TurnStarted).
	TurnStarted(sessionID, dialect, traceparent, prompt string)
	// TurnEnded ends the session's open turn (Exporter.TurnEnded).
	TurnEnded(sessionID, stop string, usage *Usage, err error, failed bool)
	// PermissionAsked is a session/request_permission about a tool call.
	PermissionAsked(sessionID, toolCallID, title string, options []string)
	// PermissionAnswered is the answer to it.
	PermissionAnswered(sessionID, toolCallID, title, answer string)
}

// TurnObservers tells each of its observers, in order; nil entries are
// skipped.
type TurnObservers []TurnObserver

// Initialized tells each observer.
func (o TurnObservers) Initialized(name, version string) {
	for _, x := range o {
		if x != nil {
			x.Initialized(name, version)
		}
	}
}

// TurnStarted tells each observer.
func (o TurnObservers) TurnStarted(sessionID, dialect, traceparent, prompt string) {
	for _, x := range o {
		if x != nil {
			x.TurnStarted(sessionID, dialect, traceparent, prompt)
		}
	}
}

// TurnEnded tells each observer.
func (o TurnObservers) TurnEnded(sessionID, stop string, usage *Usage, err error, failed bool) {
	for _, x := range o {
		if x != nil {
			x.TurnEnded(sessionID, stop, usage, err, failed)
		}
	}
}

// PermissionAsked tells each observer.
func (o TurnObservers) PermissionAsked(sessionID, toolCallID, title string, options []string) {
	for _, x := range o {
		if x != nil {
			x.PermissionAsked(sessionID, toolCallID, title, options)
		}
	}
}

// PermissionAnswered tells each observer.
func (o TurnObservers) PermissionAnswered(sessionID, toolCallID, title, answer string) {
	for _, x := range o {
		if x != nil {
			x.PermissionAnswered(sessionID, toolCallID, title, answer)
		}
	}
}

// Names of the permission span events, and what the store keeps as an
// event's detail: the options offered (joined by ", "), or the answer.
const (
	EventPermissionRequest = "acp.permission.request"
	EventPermissionAnswer  = "acp.permission.answer"
)

// permissionEvent is the span event of a permission request (name
// EventPermissionRequest, detail the options joined) or answer.
func permissionEvent(name, toolCallID, title, detail string) spanEvent {
	more := attrPermAnswer.String(detail)
	if name == EventPermissionRequest {
		more = attrPermOptions.String(detail)
	}
	return spanEvent{name: name, attrs: eventAttrs(toolCallID, title, more)}
}

// JoinOptions is the detail of a permission request: the options' names.
func JoinOptions(options []string) string { return strings.Join(options, ", ") }
