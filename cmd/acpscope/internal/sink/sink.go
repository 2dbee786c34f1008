// Package sink is the one seam between acpscope's trackers and what
// takes their events: the terminal view, the store (package storesink,
// which the web view reads), and any later exporter. run, replay and tap
// build one Fanout of them, once, and every tracker event goes through it
// the same way, so no sink sees what another does not.
package sink

import (
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Event is one tracker event as the sinks receive it: the event, the
// dialect of the connection it came from, and its wire time.
type Event struct {
	adapter.Event
	// Dialect is the connection's dialect name ("" before one is chosen).
	Dialect string
	// At is the event's wire time: when the frame that caused it crossed
	// the wire (read by the client stack, passed by the tap; in a replay,
	// the capture's own time of it).
	At time.Time
}

// Sink takes tracker events. Record is called in event order, one call at
// a time, on the goroutine delivering the tracker's events; it must not
// block for long (the store queues, the view writes a line).
type Sink interface {
	Record(Event)
}

// Fanout hands every event to each of its sinks in order; nil entries are
// passed over.
type Fanout []Sink

// Record hands e to every sink of f.
func (f Fanout) Record(e Event) {
	for _, s := range f {
		if s != nil {
			s.Record(e)
		}
	}
}

// Func is a function as a Sink.
type Func func(Event)

// Record calls f(e).
func (f Func) Record(e Event) { f(e) }
