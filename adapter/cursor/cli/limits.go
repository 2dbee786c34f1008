package cli

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// Timeouts are the runner's four timers plus the kill grace. Zero fields
// take the defaults; tests shrink them.
type Timeouts struct {
	// Startup runs from spawn until a valid system/init (no_init).
	Startup time.Duration
	// IdleWarning and Idle run from init and restart with every stdout
	// line: one warning per idle episode at IdleWarning, idle_timeout at
	// Idle. While tool calls are open the limit is extended (see ToolSlack)
	// and the warning moves with it.
	IdleWarning time.Duration
	Idle        time.Duration
	// ToolSlack is added to the longest open shell call's timeout: while
	// such calls run, the idle limit is max(Idle, timeout+ToolSlack).
	// Background calls do not extend it.
	ToolSlack time.Duration
	// WallClock runs from spawn to the end (wall_clock_timeout).
	WallClock time.Duration
	// Grace runs after a valid result, or after exit while stdout is still
	// held open, or after stdout closed while the process still runs; when
	// it expires the group is killed. It never changes the outcome.
	Grace time.Duration
	// TermGrace separates SIGTERM from SIGKILL whenever the runner kills.
	TermGrace time.Duration
}

// DefaultTimeouts are the recommended production values.
var DefaultTimeouts = Timeouts{
	Startup:     60 * time.Second,
	IdleWarning: 120 * time.Second,
	Idle:        300 * time.Second,
	ToolSlack:   30 * time.Second,
	WallClock:   2 * time.Hour,
	Grace:       3 * time.Second,
	TermGrace:   500 * time.Millisecond,
}

func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&t.Startup, d.Startup)
	set(&t.Idle, d.Idle)
	set(&t.ToolSlack, d.ToolSlack)
	set(&t.WallClock, d.WallClock)
	set(&t.Grace, d.Grace)
	set(&t.TermGrace, d.TermGrace)
	if t.IdleWarning <= 0 || t.IdleWarning >= t.Idle {
		// Keep the default proportion (warning at 40% of the limit).
		t.IdleWarning = t.Idle * 2 / 5
	}
	return t
}

// Limits bound everything the runner holds or emits. Zero fields take the
// defaults.
type Limits struct {
	// MaxLineBytes caps one stdout line (line_too_long beyond).
	MaxLineBytes int
	// MaxSegmentBytes caps one assistant segment or thinking delta.
	MaxSegmentBytes int
	// MaxToolPayloadBytes caps the args or output kept per tool call.
	MaxToolPayloadBytes int
	// MaxDiffBytes caps an edit's diffString.
	MaxDiffBytes int
	// MaxFinalBytes caps the final result text.
	MaxFinalBytes int
	// MaxAggregateBytes caps all text and tool payload emitted per turn;
	// beyond it events carry no payload and one EventTruncated is sent.
	MaxAggregateBytes int
	// MaxCallIDs caps tracked tool calls; the oldest completed are evicted,
	// and a turn with that many open calls is a schema error.
	MaxCallIDs int
	// StderrTailBytes caps the retained stderr tail.
	StderrTailBytes int
	// MaxArgvPromptBytes caps the envelope under argv transport (Linux
	// refuses single arguments of 128 KiB and more).
	MaxArgvPromptBytes int
}

// DefaultLimits are the recommended production values.
var DefaultLimits = Limits{
	MaxLineBytes:        8 << 20,
	MaxSegmentBytes:     256 << 10,
	MaxToolPayloadBytes: 64 << 10,
	MaxDiffBytes:        1 << 20,
	MaxFinalBytes:       1 << 20,
	MaxAggregateBytes:   32 << 20,
	MaxCallIDs:          1024,
	StderrTailBytes:     64 << 10,
	MaxArgvPromptBytes:  120 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxLineBytes, d.MaxLineBytes)
	set(&l.MaxSegmentBytes, d.MaxSegmentBytes)
	set(&l.MaxToolPayloadBytes, d.MaxToolPayloadBytes)
	set(&l.MaxDiffBytes, d.MaxDiffBytes)
	set(&l.MaxFinalBytes, d.MaxFinalBytes)
	set(&l.MaxAggregateBytes, d.MaxAggregateBytes)
	set(&l.MaxCallIDs, d.MaxCallIDs)
	set(&l.StderrTailBytes, d.StderrTailBytes)
	set(&l.MaxArgvPromptBytes, d.MaxArgvPromptBytes)
	return l
}

// tailBuffer keeps the last n bytes written and counts them all. It is the
// stderr sink, written by the drain goroutine and read at the end.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

func (t *tailBuffer) snapshot() ([]byte, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...), t.total
}

// truncMarker is appended where text was cut.
func truncMarker(dropped int) string {
	return "\n[… truncated " + strconv.Itoa(dropped) + " bytes]"
}

func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncateUTF8(s, n, truncMarker(len(s)-n))
}

// smallMember is the largest JSON member kept verbatim when a payload is
// over its cap: counts, flags and short strings survive.
const smallMember = 512

// boundJSON keeps raw when it fits n bytes. Otherwise an object keeps its
// small members (such as totalLines, exitCode) and replaces the others with
// "[truncated N bytes]"; anything else becomes {"truncated_bytes": N}.
func boundJSON(raw json.RawMessage, n int) json.RawMessage {
	if len(raw) <= n {
		return raw
	}
	var m map[string]json.RawMessage
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &m) == nil {
		out := make(map[string]json.RawMessage, len(m)+1)
		size := 0
		for k, v := range m {
			if len(v) <= smallMember && size+len(v)+len(k) < n/2 {
				out[k] = v
				size += len(v) + len(k) + 4
			} else {
				out[k] = json.RawMessage(strconv.Quote("[truncated " + strconv.Itoa(len(v)) + " bytes]"))
			}
		}
		out["_truncated_bytes"] = json.RawMessage(strconv.Itoa(len(raw)))
		if b, err := json.Marshal(out); err == nil && len(b) <= n {
			return b
		}
	}
	return json.RawMessage(`{"_truncated_bytes":` + strconv.Itoa(len(raw)) + `}`)
}
