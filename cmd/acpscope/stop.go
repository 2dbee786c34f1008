package main

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/tap"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// errNoConnection is a stop's error when no connection is up.
var errNoConnection = errors.New("no connection to the agent is up")

// runStop is run --web's Stop (web.Stopper): run is the client, so it
// sends session/cancel for a child that holds the cancel capability on
// its own connection, while the session runs.
type runStop struct {
	mu sync.Mutex
	c  *session.ChildCanceller
}

// connected is session.Config.Connected.
func (s *runStop) connected(c *session.ChildCanceller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c = c
}

func (s *runStop) canceller() *session.ChildCanceller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// CanStop reports whether the child holds the cancel capability on the
// connection now.
func (s *runStop) CanStop(child string) bool {
	c := s.canceller()
	return c != nil && c.CanCancel(child)
}

// Stop sends session/cancel for the child.
func (s *runStop) Stop(ctx context.Context, child string) error {
	c := s.canceller()
	if c == nil {
		return errNoConnection
	}
	return c.Cancel(ctx, child)
}

// tapStop is tap --web --allow-stop's Stop (web.Stopper): the one
// message the tap ever originates, session/cancel for a child that holds
// the cancel capability, written into the agent's input between two of
// the editor's lines (tap.AgentInput) and shown in the traffic view. The
// editor is not told: it sees the child's end as the agent reports it.
type tapStop struct {
	input *tap.AgentInput
	log   *traffic.Log
	mu    sync.Mutex
	obs   *tap.Observer // set once the observer exists
}

func (s *tapStop) observer() *tap.Observer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obs
}

// CanStop reports whether the child holds the cancel capability on the
// observed connection now.
func (s *tapStop) CanStop(child string) bool {
	o := s.observer()
	return o != nil && o.CanCancelChild(child)
}

// Stop writes session/cancel for the child into the agent's input.
func (s *tapStop) Stop(_ context.Context, child string) error {
	line, err := cancelLine(child)
	if err != nil {
		return err
	}
	if err := s.input.Inject(line); err != nil {
		return err
	}
	if s.log != nil {
		s.log.Add(capture.FromClient, line[:len(line)-1], time.Now())
	}
	return nil
}

// cancelLine is the session/cancel notification for session, as one
// line.
func cancelLine(session string) ([]byte, error) {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}{JSONRPC: "2.0", Method: "session/cancel", Params: struct {
		SessionID string `json:"sessionId"`
	}{session}})
	return append(b, '\n'), err
}
