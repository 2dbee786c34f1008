package web

import (
	"container/list"
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Defaults of the server's bounds on work (Options).
const (
	// DefaultMaxHeavy is how many heavy requests (pages and their JSON:
	// the sessions list, a session) run at once.
	DefaultMaxHeavy = 2
	// DefaultMaxWaiting is how many more wait for a turn; beyond that a
	// heavy request is answered 503 at once.
	DefaultMaxWaiting = 64
	// DefaultHeavyWait is how long a heavy request waits for its turn
	// before it is answered 503.
	DefaultHeavyWait = 10 * time.Second
	// maxCachedCards bounds the cards the laid-out views kept for
	// unchanged sessions hold in all (the latest view is always kept).
	maxCachedCards = 250000
	// maxCachedViews bounds the sessions whose views are kept (a
	// session that is not stored is kept too, as not found).
	maxCachedViews = 64
	// maxCachedPages bounds the encoded windows kept per view.
	maxCachedPages = 16
)

// retryAfter is the Retry-After (seconds) of a 503 for a full server.
const retryAfter = "2"

// gate bounds the heavy requests running at once; the others wait up to a
// time, a bounded number of them, and are refused beyond that.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64
	max     int64
	wait    time.Duration
}

func newGate(running, waiting int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, running), max: int64(waiting), wait: wait}
}

// enter takes a slot for r; it returns false (having answered 503 with
// Retry-After) when the server is full or the wait ran out, and false
// silently when the client went away.
func (g *gate) enter(w http.ResponseWriter, r *http.Request) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.waiting.Add(1) > g.max {
		g.waiting.Add(-1)
		busy(w)
		return false
	}
	defer g.waiting.Add(-1)
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
		busy(w)
	case <-r.Context().Done():
	}
	return false
}

func (g *gate) leave() { <-g.slots }

func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", retryAfter)
	http.Error(w, "acpscope web is busy; retry shortly", http.StatusServiceUnavailable)
}

// heavy wraps a handler that reads much of the store into the gate.
func (s *server) heavy(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.gate.enter(w, r) {
			return
		}
		defer s.gate.leave()
		h(w, r)
	}
}

// tokenCache answers change tokens from memory for a short time, one read
// of the store per family and interval whatever the number of pollers:
// concurrent askers of one family share one read.
type tokenCache struct {
	store *persistence.Store
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]*tokenEntry
	// reads counts the store reads (for the tests).
	reads atomic.Int64
}

type tokenEntry struct {
	ready chan struct{} // closed when token and err are set
	at    time.Time
	token string
	err   error
}

// maxTokenEntries bounds the families whose tokens are kept; beyond it
// the expired ones are dropped.
const maxTokenEntries = 4096

func (c *tokenCache) get(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	e := c.m[id]
	if e != nil {
		select {
		case <-e.ready:
			if e.err != nil || time.Since(e.at) >= c.ttl {
				e = nil // expired or failed: read again
			}
		default: // a read is under way: share it
		}
	}
	if e == nil {
		if len(c.m) >= maxTokenEntries {
			c.sweep()
		}
		e = &tokenEntry{ready: make(chan struct{})}
		c.m[id] = e
		c.mu.Unlock()
		// The read is the family's, not this request's: a poller going
		// away must not fail the others waiting on it.
		c.reads.Add(1)
		e.token, e.err = FamilyToken(context.WithoutCancel(ctx), c.store, id)
		e.at = time.Now()
		close(e.ready)
		return e.token, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.token, e.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// sweep drops the settled entries (all of them when none has expired, so
// the map stays bounded). Called with mu held.
func (c *tokenCache) sweep() {
	n := len(c.m)
	for pass := 0; pass < 2 && len(c.m) >= n; pass++ {
		for id, e := range c.m {
			select {
			case <-e.ready:
				if pass == 1 || time.Since(e.at) >= c.ttl {
					delete(c.m, id)
				}
			default:
			}
		}
	}
}

// viewCache keeps the laid-out views of the latest sessions read, each
// with the change token it was read at, so that an unchanged session is
// served without reading or laying out its cards again, and some of its
// encoded windows. One build per session runs at a time; others wait for
// it.
type viewCache struct {
	mu    sync.Mutex
	lru   *list.List // of *viewEntry, most recent first
	byID  map[string]*list.Element
	cards int
	// builds counts the views read and laid out (for the tests).
	builds atomic.Int64
}

type viewEntry struct {
	id    string
	token string
	ready chan struct{} // closed when view, ok and err are set
	view  SessionView
	ok    bool
	err   error
	// counted: the view's cards are in viewCache.cards.
	counted bool
	pages   map[[2]int][]byte
}

func newViewCache() *viewCache {
	return &viewCache{lru: list.New(), byID: map[string]*list.Element{}}
}

// get returns the view of session id at token, building it with build
// when the cache has none at that token.
func (c *viewCache) get(ctx context.Context, id, token string, build func() (SessionView, bool, error)) (*viewEntry, error) {
	c.mu.Lock()
	if el, ok := c.byID[id]; ok {
		e := el.Value.(*viewEntry)
		if e.token == token {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.err != nil {
				c.drop(e)
				return nil, e.err
			}
			return e, nil
		}
		c.removeLocked(el)
	}
	e := &viewEntry{id: id, token: token, ready: make(chan struct{}), pages: map[[2]int][]byte{}}
	c.byID[id] = c.lru.PushFront(e)
	c.mu.Unlock()
	c.builds.Add(1)
	view, ok, err := build()
	view.Token = token // what the page polls against
	c.mu.Lock()
	defer c.mu.Unlock()
	e.view, e.ok, e.err = view, ok, err
	close(e.ready)
	el, cached := c.byID[id]
	cached = cached && el.Value == e
	switch {
	case err != nil:
		if cached {
			c.removeLocked(el)
		}
		return nil, err
	case cached:
		e.counted = true
		c.cards += len(view.Cards)
		for (c.cards > maxCachedCards || c.lru.Len() > maxCachedViews) && c.lru.Len() > 1 {
			c.removeLocked(c.lru.Back())
		}
	}
	return e, nil
}

// drop removes e if it is still the cached entry of its session.
func (c *viewCache) drop(e *viewEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[e.id]; ok && el.Value == e {
		c.removeLocked(el)
	}
}

// removeLocked removes el (a build under way finishes uncached).
func (c *viewCache) removeLocked(el *list.Element) {
	e := el.Value.(*viewEntry)
	if e.counted {
		c.cards -= len(e.view.Cards)
		e.counted = false
	}
	c.lru.Remove(el)
	delete(c.byID, e.id)
}

// page returns the encoded window [offset, offset+limit) of e, encoding
// it with enc the first time.
func (c *viewCache) page(e *viewEntry, offset, limit int, enc func(SessionView) ([]byte, error)) ([]byte, error) {
	k := [2]int{offset, limit}
	c.mu.Lock()
	b, ok := e.pages[k]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := enc(e.view.Window(offset, limit))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(e.pages) >= maxCachedPages {
		clear(e.pages)
	}
	e.pages[k] = b
	c.mu.Unlock()
	return b, nil
}

// intParam reads a non-negative integer query parameter (0 when absent or
// malformed).
func intParam(r *http.Request, name string) int {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
