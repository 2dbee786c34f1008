package persistence

import (
	"expvar"
	"sync"
	"sync/atomic"
)

// ExpvarName is the process-global expvar map every Store adds its writer
// counters to, following the `<area>_total` convention.
const ExpvarName = "subagent_context_total"

// Counter keys of the expvar map and of Counters.
const (
	CounterAttempted         = "attempted"
	CounterPersisted         = "persisted"
	CounterSkippedNoIdentity = "skipped_no_identity"
	CounterAnomalousValue    = "anomalous_value"
	CounterFailed            = "failed"
	CounterUnknownExecution  = "unknown_execution"
)

var counterKeys = []string{
	CounterAttempted, CounterPersisted, CounterSkippedNoIdentity,
	CounterAnomalousValue, CounterFailed, CounterUnknownExecution,
}

var (
	globalOnce     sync.Once
	globalCounters *expvar.Map
)

// global returns the process-wide map, publishing it on first use with all
// six keys at 0. expvar names are global and Publish panics on a duplicate,
// so a map another package already published under the name is reused, and
// a non-map value under the name leaves the counters unpublished (they still
// count, per store).
func global() *expvar.Map {
	globalOnce.Do(func() {
		switch v := expvar.Get(ExpvarName).(type) {
		case *expvar.Map:
			globalCounters = v
		case nil:
			globalCounters = expvar.NewMap(ExpvarName)
		default:
			globalCounters = new(expvar.Map)
		}
		for _, k := range counterKeys {
			globalCounters.Add(k, 0)
		}
	})
	return globalCounters
}

func init() { global() }

// Counters is a snapshot of one store's writer counters. The invariant
// Attempted = SkippedNoIdentity + Persisted + Failed holds once every
// Record call has returned. Units are frames, not rows.
type Counters struct {
	Attempted         int64
	Persisted         int64
	SkippedNoIdentity int64
	AnomalousValue    int64
	Failed            int64
	UnknownExecution  int64
}

// storeCounters counts per store (so parallel tests and several stores in
// one process stay separable) and mirrors every increment into the global
// expvar map.
type storeCounters struct {
	attempted, persisted, skipped, anomalous, failed, unknown atomic.Int64
}

func (c *storeCounters) add(key string) {
	switch key {
	case CounterAttempted:
		c.attempted.Add(1)
	case CounterPersisted:
		c.persisted.Add(1)
	case CounterSkippedNoIdentity:
		c.skipped.Add(1)
	case CounterAnomalousValue:
		c.anomalous.Add(1)
	case CounterFailed:
		c.failed.Add(1)
	case CounterUnknownExecution:
		c.unknown.Add(1)
	}
	global().Add(key, 1)
}

func (c *storeCounters) snapshot() Counters {
	return Counters{
		Attempted:         c.attempted.Load(),
		Persisted:         c.persisted.Load(),
		SkippedNoIdentity: c.skipped.Load(),
		AnomalousValue:    c.anomalous.Load(),
		Failed:            c.failed.Load(),
		UnknownExecution:  c.unknown.Load(),
	}
}
