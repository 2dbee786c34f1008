package main

import (
	"context"
	"strings"
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

// adopt makes the frames of sessionID, which a --resume reopens, go to the
// execution its stored cards belong to, so that history the agent replays
// updates those rows instead of adding a second copy of each card. A
// session without stored acpscope cards keeps this run's own execution.
func (s *storeSink) adopt(ctx context.Context, sessionID string) {
	if s == nil || s.store == nil {
		return
	}
	rows, err := s.store.ListBySession(ctx, sessionID)
	if err != nil {
		return
	}
	for _, r := range rows {
		if strings.HasPrefix(r.AgentExecutionID, web.ExecutionID("", "")) {
			s.mu.Lock()
			if s.adopted == nil {
				s.adopted = map[string]string{}
			}
			s.adopted[sessionID] = r.AgentExecutionID
			s.mu.Unlock()
			return
		}
	}
}

// executionID is the agent execution id of a frame of sessionID: the
// adopted one of a resumed session, else this run's for the dialect.
func (s *storeSink) executionID(dialect, sessionID string) string {
	s.mu.Lock()
	id, ok := s.adopted[sessionID]
	s.mu.Unlock()
	if ok {
		return id
	}
	return web.ExecutionID(dialect, s.runID)
}
