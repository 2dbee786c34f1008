package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
)

// The traffic view: the messages of the connection the serving process
// watches (acpscope run --web, tap --web) or of a capture (web --capture),
// from a traffic.Log. Its routes exist only when Options.Traffic is set:
//
//	GET /traffic[?session=ID&method=M]
//	                          the page: a live message log, both
//	                          directions, filtered by session and method
//	GET /api/traffic?after=SEQ[&session=ID&method=M][&tail=N]
//	                          the kept messages after SEQ as JSON, each
//	                          with its pretty text (traffic.Pretty); with
//	                          tail, only from the latest N matching on
//	GET /traffic/card?session=ID[&call=TOOLCALL]
//	                          redirects to the card the message touched
//	                          on its session page: the tool call's card,
//	                          or (without call) the card of the child
//	                          session, else the session itself

// trafficPageFrames bounds the messages one /api/traffic answer carries,
// and trafficPageBytes their pretty text: the page asks again for more.
const (
	trafficPageFrames = 500
	trafficPageBytes  = 4 << 20
)

// maxLinkRoots bounds the sessions a card link looks the card up in.
const maxLinkRoots = 16

func (s *server) routeTraffic() {
	if s.opts.Traffic == nil {
		return
	}
	s.mux.HandleFunc("GET /traffic", s.trafficPage)
	s.mux.HandleFunc("GET /api/traffic", s.heavy(s.trafficJSON))
	s.mux.HandleFunc("GET /traffic/card", s.heavy(s.trafficCard))
}

// trafficLimits are the Log's bounds, shown on the page.
type trafficLimits struct {
	Frames     int   `json:"frames"`
	Bytes      int64 `json:"bytes"`
	FrameBytes int   `json:"frame_bytes"`
}

// trafficData is the traffic page's data.
type trafficData struct {
	Session string        `json:"session"`
	Method  string        `json:"method"`
	Poll    int64         `json:"poll_ms"`
	Limits  trafficLimits `json:"limits"`
	// Source says where the messages come from (live, or the capture).
	Source string `json:"source"`
}

// MarshalJSON encodes the page data with the filters' forbidden runes
// escaped (safetext.JSON): the data block carries no bidi override raw.
func (d trafficData) MarshalJSON() ([]byte, error) {
	type plain trafficData
	b, err := json.Marshal(plain(d))
	return safetext.JSON(b), err
}

// trafficFrame is one message as /api/traffic sends it.
type trafficFrame struct {
	traffic.Frame
	// Ms is the time since the first message, in milliseconds.
	Ms float64 `json:"ms"`
	// Text is the message's pretty text.
	Text string `json:"text"`
}

// trafficAnswer is /api/traffic's answer.
type trafficAnswer struct {
	Frames   []trafficFrame `json:"frames"`
	Last     uint64         `json:"last"`
	More     bool           `json:"more"`
	Kept     int            `json:"kept"`
	Bytes    int64          `json:"bytes"`
	Dropped  int64          `json:"dropped"`
	Methods  []string       `json:"methods"`
	Sessions []string       `json:"sessions"`
}

func (s *server) trafficPage(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	o := s.opts.Traffic.Options()
	d := trafficData{Session: q.Get("session"), Method: q.Get("method"), Poll: s.opts.PollInterval.Milliseconds(),
		Limits: trafficLimits{Frames: o.MaxFrames, Bytes: o.MaxBytes, FrameBytes: o.MaxFrameBytes}, Source: s.opts.TrafficSource}
	s.render(w, r, "traffic.html", pageData{Title: "traffic", Page: "traffic", Data: d}, start)
}

func (s *server) trafficJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, _ := strconv.ParseUint(q.Get("after"), 10, 64)
	filter := traffic.Filter{Session: q.Get("session"), Method: q.Get("method")}
	if tail := intParam(r, "tail"); tail > 0 {
		after = max(after, s.opts.Traffic.TailStart(filter, tail))
	}
	p := s.opts.Traffic.Since(after, filter, trafficPageFrames)
	a := trafficAnswer{Frames: make([]trafficFrame, 0, len(p.Frames)), Last: p.Last, More: p.More, Kept: p.Kept,
		Bytes: p.Bytes, Dropped: p.Dropped, Methods: p.Methods, Sessions: p.Sessions}
	size := 0
	for i := range p.Frames {
		f := &p.Frames[i]
		if size >= trafficPageBytes {
			a.More = true // the rest comes with the next poll
			break
		}
		text := traffic.Pretty(f)
		size += len(text)
		a.Frames = append(a.Frames, trafficFrame{Frame: *f, Ms: float64(f.At.Sub(p.Start).Microseconds()) / 1000, Text: text})
	}
	if a.More && len(a.Frames) > 0 {
		a.Last = a.Frames[len(a.Frames)-1].Seq // the next poll goes on from there
	}
	s.writeJSON(w, a)
}

// trafficCard redirects to the card a message touched. The card is looked
// for in the message's session and in the sessions the client opened
// (whose views hold their child sessions' cards), newest first.
func (s *server) trafficCard(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	session, call := q.Get("session"), q.Get("call")
	if session == "" {
		http.Error(w, "the message names no session", http.StatusNotFound)
		return
	}
	seen := map[string]bool{}
	for _, id := range append([]string{session}, s.opts.Traffic.Roots()...) {
		if seen[id] || len(seen) == maxLinkRoots {
			continue
		}
		seen[id] = true
		e, err := s.cachedView(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !e.ok {
			continue
		}
		for i, c := range e.view.Cards {
			if call != "" && c.SessionID == session && c.ToolCallID == call || call == "" && c.ChildSessionID == session {
				http.Redirect(w, r, "/session?id="+url.QueryEscape(e.view.Session.ID)+"&offset="+strconv.Itoa(i)+"#card-0", http.StatusSeeOther)
				return
			}
		}
		if id == session && call == "" {
			http.Redirect(w, r, "/session?id="+url.QueryEscape(session), http.StatusSeeOther)
			return
		}
	}
	http.Error(w, "that card is not in the store (yet): only subagent cards are stored, and a running one is stored as it changes", http.StatusNotFound)
}

// cachedView is the laid-out view of a session, read again only when its
// change token moved; ok is false on the entry when it is not stored.
func (s *server) cachedView(ctx context.Context, id string) (*viewEntry, error) {
	token, err := s.tokens.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.views.get(ctx, id, token, func() (SessionView, bool, error) {
		return LoadSession(context.WithoutCancel(ctx), s.store, id)
	})
}
