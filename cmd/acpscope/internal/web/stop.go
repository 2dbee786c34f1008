package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
)

// The status panel's live facts and the Stop action. Their routes exist
// only when the serving process watches a connection (Options.Traffic)
// or may stop a child on it (Options.Stop):
//
//	GET  /api/live?id=ID       what the connection said of each running
//	                           child session of the session's cards
//	                           (traffic.Activity) and whether it may be
//	                           stopped
//	POST /api/stop             token=T&session=ID&child=CHILD: sends
//	                           session/cancel for CHILD (Options.Stop)
//
// A stop is refused unless it comes from a page of this server: POST
// only (405 otherwise), the Host checked as every request's (421), an
// Origin naming this server as addressed (403), the per-process token
// the session page carries in its data block, never in a cookie (403);
// then the child must be a card's child session in that session (404)
// that holds the cancel capability now (409).

// Stopper stops a child session on the connection the serving process
// holds: acpscope run --web (it is the client), or tap --web
// --allow-stop (it writes into the agent's input).
type Stopper interface {
	// CanStop reports whether the child session holds the ACP cancel
	// capability now (adapter.Tracker.CanCancelChild).
	CanStop(child string) bool
	// Stop sends session/cancel for the child session.
	Stop(ctx context.Context, child string) error
}

// maxLiveChildren bounds the running children one /api/live answer
// covers (the first ones of the view).
const maxLiveChildren = 50

// maxStopBody bounds a stop request's form.
const maxStopBody = 4 << 10

// stopControl is the server's Stop state: its token and the children it
// sent session/cancel for.
type stopControl struct {
	token string
	mu    sync.Mutex
	sent  map[string]time.Time
}

func newStopControl() *stopControl {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on a supported system
	return &stopControl{token: hex.EncodeToString(b), sent: map[string]time.Time{}}
}

func (s *server) routeLive() {
	if s.opts.Traffic == nil && s.opts.Stop == nil {
		return
	}
	s.mux.HandleFunc("GET /api/live", s.heavy(s.liveJSON))
	if s.opts.Stop != nil {
		s.stop = newStopControl()
		s.mux.HandleFunc("POST /api/stop", s.stopChild)
	}
}

// childLive is one running child session as /api/live serves it.
type childLive struct {
	traffic.Activity
	// CanStop reports that it holds the cancel capability now (false
	// without Options.Stop).
	CanStop bool `json:"can_stop"`
	// StopSent is when this server last sent session/cancel for it.
	StopSent *time.Time `json:"stop_sent"`
}

// liveAnswer is /api/live's answer.
type liveAnswer struct {
	// Stop reports that this server may stop a child (Options.Stop).
	Stop     bool                 `json:"stop"`
	Children map[string]childLive `json:"children"`
}

func (s *server) liveJSON(w http.ResponseWriter, r *http.Request) {
	e, err := s.cachedView(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !e.ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	a := liveAnswer{Stop: s.opts.Stop != nil, Children: map[string]childLive{}}
	for _, c := range e.view.Cards {
		if len(a.Children) == maxLiveChildren {
			break
		}
		if c.Status != "open" || c.ChildSessionID == "" {
			continue
		}
		var l childLive
		if s.opts.Traffic != nil {
			l.Activity = s.opts.Traffic.Activity(c.ChildSessionID)
		} else {
			l.Activity = traffic.Activity{Calls: []traffic.ActivityCall{}, Permissions: []traffic.ActivityPermission{}}
		}
		if s.opts.Stop != nil {
			l.CanStop = s.opts.Stop.CanStop(c.ChildSessionID)
			s.stop.mu.Lock()
			if t, ok := s.stop.sent[c.ChildSessionID]; ok {
				l.StopSent = &t
			}
			s.stop.mu.Unlock()
		}
		a.Children[c.ChildSessionID] = l
	}
	s.writeJSON(w, a)
}

// stopChild sends session/cancel for a child, after the checks above.
func (s *server) stopChild(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin == "" || origin != "http://"+r.Host {
		http.Error(w, "refused: a stop must come from this server's own page (Origin)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxStopBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "refused: the form could not be read", http.StatusBadRequest)
		return
	}
	token := r.PostForm.Get("token")
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.stop.token)) != 1 {
		http.Error(w, "refused: wrong or missing token (reload the session page)", http.StatusForbidden)
		return
	}
	session, child := r.PostForm.Get("session"), r.PostForm.Get("child")
	e, err := s.cachedView(r.Context(), session)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	known := false
	for _, c := range e.view.Cards {
		known = known || child != "" && c.ChildSessionID == child
	}
	if !e.ok || !known {
		http.Error(w, "refused: no card of that session has that child session", http.StatusNotFound)
		return
	}
	if !s.opts.Stop.CanStop(child) {
		http.Error(w, "refused: that child does not hold the cancel capability (the agent did not grant it, or it is not running)", http.StatusConflict)
		return
	}
	if err := s.opts.Stop.Stop(r.Context(), child); err != nil {
		s.opts.Log.Warn("acpscope web: stop failed", "error", err)
		http.Error(w, "session/cancel could not be sent: "+err.Error(), http.StatusBadGateway)
		return
	}
	s.stop.mu.Lock()
	s.stop.sent[child] = s.opts.Now()
	s.stop.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"sent":true}` + "\n"))
}
