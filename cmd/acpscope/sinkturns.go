package main

import (
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
)

// beginTurn starts a new turn: the frames that follow get a new turn id
// (in every session; the store keeps a card's first turn id, so a card
// that goes on from an earlier turn keeps that one).
func (s *storeSink) beginTurn(string) {
	if s == nil || s.store == nil {
		return
	}
	s.mu.Lock()
	s.turns = map[string]string{}
	s.turnStart = time.Now()
	s.mu.Unlock()
}

// executionID is the agent execution id of this run's frames of a dialect.
// A run is one agent process, so one execution, always: a --resume that
// reopens a stored session writes its own rows (the replayed history
// included) and never an earlier run's; the read side shows each card
// once (persistence.Store.ListCards).
func (s *storeSink) executionID(dialect string) string {
	return web.ExecutionID(dialect, s.runID)
}
