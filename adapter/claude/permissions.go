package claude

import (
	"context"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// PendingPermissions keeps the session/request_permission requests a client
// has not answered yet, by the session that asked, so that cancelling a
// child session answers that child's requests with the cancelled outcome
// exactly once. A request stays with the session that asked: cancelling a
// child never touches its parent's requests, nor the reverse. The zero
// value is ready to use; it is safe for concurrent use.
type PendingPermissions struct {
	mu      sync.Mutex
	next    uint64
	pending map[uint64]*permissionRequest
}

type permissionRequest struct {
	sessionID string
	answer    chan acp.RequestPermissionResponse // buffered 1, written once
}

// PermissionTicket is one registered request.
type PermissionTicket struct {
	// ID identifies the request for Answer.
	ID uint64
	// SessionID is the session that asked.
	SessionID string
	// Answer receives the request's single response.
	Answer <-chan acp.RequestPermissionResponse
}

// Ask registers a request from sessionID.
func (p *PendingPermissions) Ask(sessionID string) PermissionTicket {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[uint64]*permissionRequest{}
	}
	p.next++
	r := &permissionRequest{sessionID: sessionID, answer: make(chan acp.RequestPermissionResponse, 1)}
	p.pending[p.next] = r
	return PermissionTicket{ID: p.next, SessionID: sessionID, Answer: r.answer}
}

// Answer delivers resp to request id. It reports false when the request
// was already answered (or never registered): a request never gets two
// responses.
func (p *PendingPermissions) Answer(id uint64, resp acp.RequestPermissionResponse) bool {
	p.mu.Lock()
	r := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	if r == nil {
		return false
	}
	r.answer <- resp
	return true
}

// CancelSession answers every pending request of exactly sessionID with
// the cancelled outcome and returns how many it answered. Call it when the
// client cancels that session (for a child, only while CanCancel allows).
func (p *PendingPermissions) CancelSession(sessionID string) int {
	p.mu.Lock()
	var ids []uint64
	for id, r := range p.pending {
		if r.sessionID == sessionID {
			ids = append(ids, id)
		}
	}
	p.mu.Unlock()
	n := 0
	for _, id := range ids {
		if p.Answer(id, Cancelled()) {
			n++
		}
	}
	return n
}

// Pending returns how many requests of sessionID await an answer.
func (p *PendingPermissions) Pending(sessionID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.pending {
		if r.sessionID == sessionID {
			n++
		}
	}
	return n
}

// Wait blocks until the ticket is answered, or ctx ends, in which case the
// request is answered cancelled (once) and that answer is returned.
func (p *PendingPermissions) Wait(ctx context.Context, t PermissionTicket) acp.RequestPermissionResponse {
	select {
	case resp := <-t.Answer:
		return resp
	case <-ctx.Done():
		p.Answer(t.ID, Cancelled())
		return <-t.Answer
	}
}

// Cancelled is the cancelled permission outcome.
func Cancelled() acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
	}}
}
