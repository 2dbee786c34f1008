package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Agent is the agent process the tap passes to, started by the caller
// under the process guard.
type Agent struct {
	// Stdin and Stdout are the agent's standard input and output. When
	// Stdout is also an io.Closer it is closed once the editor stops
	// reading, so that the agent's writes fail (EPIPE, SIGPIPE) as they
	// would without the tap.
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Exited is closed once the agent process has exited.
	Exited <-chan struct{}
	// Signal forwards a signal to the agent (and its process group).
	Signal func(syscall.Signal)
	// Stop ends the agent and everything it started (SIGTERM, then
	// SIGKILL) and returns once none of them runs; it is safe to call
	// after the agent exited, and more than once.
	Stop func()
}

// Config configures Run.
type Config struct {
	// EditorIn is what the editor writes (our standard input); EditorOut
	// is what it reads (our standard output).
	EditorIn  io.Reader
	EditorOut io.Writer
	// Observer follows the connection; nil passes the bytes only.
	Observer *Observer
	// Signals are forwarded to the agent. A stop signal (SIGTERM, SIGHUP,
	// SIGQUIT: the editor ends the tap) also stops the agent at once and
	// ends the observation without waiting for the agent (see Run).
	Signals <-chan os.Signal
	// Grace is how long the agent may take to exit once its input ended
	// before it is stopped (default 3s).
	Grace time.Duration
	// SignalWait bounds, after a stop signal, how long the tap waits for
	// the agent's output to end, and then for the observer to finish what
	// is queued (default DefaultSignalWait each): an editor that sends
	// SIGTERM kills soon after.
	SignalWait time.Duration
	// Observed, when set, is called once with what Run returns as soon as
	// the observation is complete, before Run waits for the agent to be
	// gone: the caller stores and reports there, so that an editor that
	// kills the tap while the agent is slow to exit loses neither. When
	// the agent ended its output first, its process has exited by then.
	Observed func(Stats, error)
	// Ended, when set, is called once the connection is over (the editor
	// closed, the agent ended its output or exited, or a stop signal's
	// wait ran out), with the stop signal that ended it (0: none did),
	// before Run waits for the observer to finish what is queued: the
	// caller bounds there what the observer may still be waiting for.
	Ended func(stop syscall.Signal)
	// DrainWait bounds how long the tap waits, once the agent is gone,
	// for the editor to take the rest of the agent's output (default 5s).
	DrainWait time.Duration
	// ObserveWait bounds how long the tap waits at the end for the
	// observer to finish what is queued (default 30s); what is left is
	// reported as Unobserved.
	ObserveWait time.Duration
	// QueueLines and QueueBytes bound the observer's queue (defaults
	// DefaultQueueLines, DefaultQueueBytes); MaxLineBytes bounds one
	// observed line (default DefaultMaxLineBytes).
	QueueLines   int
	QueueBytes   int64
	MaxLineBytes int
}

// DefaultSignalWait is Config.SignalWait's default.
const DefaultSignalWait = 500 * time.Millisecond

// Stats is what a tap passed and observed.
type Stats struct {
	// FromEditor and FromAgent count the bytes forwarded each way.
	FromEditor, FromAgent int64
	// Lines counts the complete lines seen both ways.
	Lines int64
	// Dropped counts lines not observed because the observer's queue was
	// full; TooLong lines over the observer's line limit; Unparsed lines
	// that are not JSON-RPC messages; Unobserved lines still queued when
	// the observer was given up on. All of them were forwarded unchanged.
	Dropped, TooLong, Unparsed, Unobserved int64
	// EditorClosed reports that the editor ended its side first;
	// AgentExited that the agent ended its output first.
	EditorClosed, AgentExited bool
	// OutputClosed reports that the editor stopped reading (a write to it
	// failed): the agent's output was closed under it, so that its own
	// writes failed as they would without the tap.
	OutputClosed bool
	// Signal is the stop signal that ended the tap (0: none did); what
	// passed after the observation ended is forwarded but not counted.
	Signal syscall.Signal
	// GraceStopped reports that the agent was still running Grace after
	// its input ended, and the tap stopped it.
	GraceStopped bool
}

// String is the one-line report the tap logs at the end. The bytes
// passed are the bytes written to the other side: after the editor
// stopped reading, what the agent still wrote is not among them.
func (s Stats) String() string {
	line := fmt.Sprintf("passed %d bytes from the editor and %d from the agent (%d lines); not observed: %d dropped (observer busy), %d too long, %d not JSON-RPC, %d left when the observer was given up",
		s.FromEditor, s.FromAgent, s.Lines, s.Dropped, s.TooLong, s.Unparsed, s.Unobserved)
	if s.OutputClosed {
		line += "; the editor stopped reading the agent's output"
	}
	return line
}

// errDrain reports output the agent left that never reached its end.
var errDrain = errors.New("tap: the agent exited, and the editor did not take the rest of its output")

// Run passes the connection through until the editor closes its side, the
// agent ends its output or a stop signal comes, and ends the agent in each
// case: no agent process outlives Run.
//
// When the editor closes, the agent's input is closed and it has Grace to
// exit before it is stopped; the agent's output is forwarded to its end.
// When the editor stops reading (a write to it fails), the agent's output
// is closed (see Agent.Stdout) and Run waits for the agent to end as it
// would without the tap, or for the editor's side to close.
// When the agent ends its output (exits), whatever it left running is
// stopped and Run does not wait for the editor's side: interrupt, when
// set, is called to end its pending read, and reports whether it will end
// (then Run waits up to DrainWait for it); otherwise the read is abandoned
// to end with the process. A stop signal is forwarded and the agent is
// stopped at once; Run waits up to SignalWait for the agent's output to
// end, and what the pumps read after that is still forwarded but no
// longer observed. ctx ending stops the agent at once.
//
// Then the observer finishes what is queued (up to ObserveWait, SignalWait
// after a stop signal), Observed is called, and Run returns once the agent
// and everything it started are gone.
func Run(ctx context.Context, cfg Config, agent Agent, interrupt func() bool) (Stats, error) {
	if cfg.Grace <= 0 {
		cfg.Grace = 3 * time.Second
	}
	if cfg.DrainWait <= 0 {
		cfg.DrainWait = 5 * time.Second
	}
	if cfg.ObserveWait <= 0 {
		cfg.ObserveWait = 30 * time.Second
	}
	if cfg.SignalWait <= 0 {
		cfg.SignalWait = DefaultSignalWait
	}
	q := NewQueue(cfg.QueueLines, cfg.QueueBytes)
	up := &Pump{From: capture.FromClient, MaxLineBytes: cfg.MaxLineBytes}
	down := &Pump{From: capture.FromAgent, MaxLineBytes: cfg.MaxLineBytes}
	observed := make(chan int64, 1)
	if cfg.Observer != nil {
		up.Queue, down.Queue = q, q
		go func() { observed <- observe(cfg.Observer, q) }()
	} else {
		q.Close()
		observed <- 0
	}

	upDone := make(chan error, 1)
	downDone := make(chan error, 1)
	go func() { upDone <- up.Copy(agent.Stdin, cfg.EditorIn) }()
	go func() { downDone <- down.Copy(cfg.EditorOut, agent.Stdout) }()

	var st Stats
	var runErr error
	var grace <-chan time.Time // the editor closed: when the agent is stopped
	finishedUp := false
	outputEnded := false // the agent's output ended by itself
	exited := agent.Exited
	var drain <-chan time.Time      // the agent is gone: how long its output may take
	var signalWait <-chan time.Time // a stop signal came: how long its output may take
wait:
	for {
		select {
		case err := <-upDone:
			finishedUp = true
			upDone = nil
			st.EditorClosed = !st.AgentExited
			_ = agent.Stdin.Close() // an ACP agent ends at the end of its input
			var werr *WriteError
			if err != nil && !errors.As(err, &werr) && !isClosedPipe(err) {
				// A failed write means the agent is gone: its output
				// ends the tap. A failed read is the editor's side.
				runErr = fmt.Errorf("reading from the editor: %w", err)
			}
			if grace == nil {
				grace = time.After(cfg.Grace)
			}
		case err := <-downDone:
			downDone = nil
			var werr *WriteError
			if errors.As(err, &werr) {
				// The editor stopped reading: so does the tap, and the
				// agent's writes fail from now on, as without the tap.
				// It ends as it chooses (SIGPIPE kills most), and its
				// end, the editor's side or a signal end the tap.
				st.OutputClosed = true
				if c, ok := agent.Stdout.(io.Closer); ok {
					_ = c.Close()
				}
				if exited != nil {
					continue
				}
				st.AgentExited = !st.EditorClosed
				break wait
			}
			st.AgentExited = !st.EditorClosed
			switch {
			case err == nil, isClosedPipe(err):
				outputEnded = st.Signal == 0
			default:
				if runErr == nil {
					runErr = fmt.Errorf("reading from the agent: %w", err)
				}
			}
			break wait
		case sig := <-cfg.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			agent.Signal(s)
			if isStopSignal(s) && st.Signal == 0 {
				// The editor ends the tap and will not wait long: the
				// agent is stopped now, and its output waited for only
				// SignalWait.
				st.Signal = s
				go agent.Stop()
				signalWait = time.After(cfg.SignalWait)
			}
		case <-exited:
			// What the agent left running goes too, so that its output
			// ends once the editor has taken what is in the pipe.
			exited = nil
			go agent.Stop()
			if st.OutputClosed {
				st.AgentExited = !st.EditorClosed
				break wait // no output left to wait for
			}
			drain = time.After(cfg.DrainWait)
		case <-drain:
			// The agent is gone and its output has not ended: the editor
			// does not read it.
			st.AgentExited = !st.EditorClosed
			if runErr == nil {
				runErr = errDrain
			}
			break wait
		case <-signalWait:
			// The observation ends here; the pumps go on forwarding.
			break wait
		case <-grace:
			grace = nil
			// The agent had its grace: end it, and with it its output.
			select {
			case <-agent.Exited: // it has just exited by itself
			default:
				st.GraceStopped = true
			}
			go agent.Stop()
		case <-ctx.Done():
			go agent.Stop()
			ctx = context.Background() // once
		}
	}
	if cfg.Ended != nil {
		cfg.Ended(st.Signal)
	}
	// Whatever the agent left running goes too; the observation is
	// finished meanwhile, without waiting for that.
	stopped := make(chan struct{})
	go func() {
		agent.Stop()
		close(stopped)
	}()
	if outputEnded {
		<-agent.Exited // imminent, and its exit status is the caller's to read
	}
	drainWait, observeWait := cfg.DrainWait, cfg.ObserveWait
	if st.Signal != 0 {
		drainWait, observeWait = min(drainWait, cfg.SignalWait), min(observeWait, cfg.SignalWait)
	}
	if !finishedUp {
		_ = agent.Stdin.Close()
		if interrupt != nil && interrupt() {
			select {
			case <-upDone:
			case <-time.After(drainWait):
			}
		}
	}
	if cfg.Observer != nil {
		cfg.Observer.endedByAgent(st.AgentExited && st.Signal == 0)
	}
	q.Close()
	select {
	case st.Unobserved = <-observed:
	case <-time.After(observeWait):
		st.Unobserved = int64(q.Len())
	}
	st.FromEditor, st.FromAgent = up.Bytes.Load(), down.Bytes.Load()
	st.Lines = up.Lines.Load() + down.Lines.Load()
	st.TooLong = up.TooLong.Load() + down.TooLong.Load()
	st.Dropped = q.Dropped.Load()
	if cfg.Observer != nil {
		st.Unparsed = cfg.Observer.Unparsed.Load()
	}
	if cfg.Observed != nil {
		cfg.Observed(st, runErr)
	}
	<-stopped
	return st, runErr
}

// isStopSignal reports the signals by which an editor ends the tap.
func isStopSignal(s syscall.Signal) bool {
	return s == syscall.SIGTERM || s == syscall.SIGHUP || s == syscall.SIGQUIT
}

// observe drains q into obs until q is closed (follow), ends the
// observation (Finish) and returns 0 (no line was left unobserved).
func observe(obs *Observer, q *Queue) int64 {
	follow(obs, q)
	obs.Finish()
	return 0
}

// follow drains q into obs, each line at its wire time, until q is closed.
// While the connection lasts it runs on a thread of its own at the lowest
// priority (lowerPriority), with a Go processor of its own (ownProcessor),
// and rests as realPacing says: the pumps, the editor and the agent get
// the CPU first. The thread is the observer's for the connection's life,
// never taken and given back per backlog (a thread's hand-offs and a
// GOMAXPROCS change each time cost the pumps more than its priority
// saved). Once q is closed nothing passes any more: the lines left are
// observed on the caller's goroutine, at the process's priority.
func follow(obs *Observer, q *Queue) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ownProcessor()()
		obs.nice = lowerPriority()
		followPaced(obs, q, realPacing, true)
	}()
	<-done
	followPaced(obs, q, realPacing, false)
	obs.unobserved(q.lost())
}

// pacing is how the observer measures its work and rests: the clock and
// the sleep (fakes in tests).
type pacing struct {
	now  func() time.Time
	rest func(time.Duration)
}

var realPacing = pacing{now: time.Now, rest: time.Sleep}

// followPaced observes the lines of q with the given pacing until q is
// closed and empty, or, with whileOpen, until q is closed. While the
// observer keeps up it takes each line as soon as it is queued. While it
// is behind (more than the queue's yieldAt bytes wait) and the pumps are
// still reading, it works at most one yieldSlice in yieldShare: after a
// slice of work it rests for the rest, and what does not fit in the queue
// meanwhile is dropped and counted. A busy observer costs the pumps their
// pace however low its priority: every read a pump wakes up for must take
// a core back from it (measured in BenchmarkObserverPace and
// BenchmarkThroughput). Once the pumps are quiet it works without rest
// until it has caught up.
func followPaced(obs *Observer, q *Queue, p pacing, whileOpen bool) {
	var slice time.Time // when the current slice of work while behind began
	for !whileOpen || !q.shut.Load() {
		l, ok := q.Next()
		if !ok {
			return
		}
		if slice.IsZero() && q.behind(p.now()) {
			slice = p.now()
		}
		observeLine(obs, q, l)
		if slice.IsZero() {
			continue
		}
		if worked := p.now().Sub(slice); worked >= yieldSlice {
			if q.behind(p.now()) {
				p.rest((yieldShare - 1) * worked)
			}
			slice = time.Time{}
		}
	}
}

// While the observer is behind and the pumps are reading, it works one
// yieldSlice at a time, at most one part in yieldShare of the time.
const (
	yieldSlice = 500 * time.Microsecond
	yieldShare = 16
)

// observeLine hands one line of q to obs.
func observeLine(obs *Observer, q *Queue, l Line) {
	obs.unobserved(q.lost())
	obs.ObserveAt(l.From, l.Bytes, l.At)
	q.Done(l)
}

// isClosedPipe reports the errors of a pipe or file closed under a read or
// write: the other side is gone, which is how a tap ends.
func isClosedPipe(err error) bool {
	return errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}
