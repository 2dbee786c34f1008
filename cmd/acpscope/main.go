// Command acpscope runs, records and replays Agent Client Protocol sessions
// and shows what a multi-agent turn did: messages, tool calls and one card
// per subagent, whichever agent sent it.
//
// Usage:
//
//	acpscope run [flags] -- <agent command…>   drive an ACP agent over stdio, turn by turn
//	acpscope replay [flags] [CAPTURE]          replay a capture (the bundled demo without one)
//	acpscope tap [flags] -- <agent command…>   stand between an editor and its agent, observing
//	acpscope subagents --session ID [--json]   list stored subagent contexts
//	acpscope sessions [--db DSN] [--json]      list recent stored sessions
//	acpscope web [--db DSN] [--addr ADDR]      browse stored sessions in a browser
//	acpscope health [--db DSN]                 run the persistence health check
//	acpscope migrate [--dry-run] [--db DSN]    bring the database up to date
//	acpscope export --session ID [--otlp URL]  send a stored session as a trace
//	acpscope cursor doctor                     report Cursor CLI discovery and compatibility
//
// Exit codes: 0 success; 1 the agent or a turn failed (a reopen the agent
// refused included); 2 usage or input error (bad flags, unreadable or
// malformed capture, unreachable database, a --resume the agent cannot
// serve: it offers neither session/load nor session/resume); 3 a turn was
// cancelled by --timeout, SIGINT or SIGTERM; 4 subagent cards not stored;
// 129 SIGHUP, 131 SIGQUIT and 141 a closed standard output, each after the
// running turn was cancelled the same way. `acpscope tap` exits as its
// agent did: its exit code, or 128+N when signal N killed it, and 128+N
// after the editor's stop signal N (see tapEnding); its own failures keep
// the codes above.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/internal/procguard"
)

// version is acpscope's version, sent as clientInfo.version.
const version = "0.1.0-dev"

// Exit codes.
const (
	exitOK    = 0
	exitTurn  = 1
	exitUsage = 2
	// exitCancelled: acpscope cancelled the turn (--timeout, SIGINT,
	// SIGTERM). It is apart from 1 so that a script can tell "the agent
	// failed" from "the agent ran out of time or was interrupted".
	exitCancelled = 3
	// The endings acpscope did not ask for, each after the running turn
	// was cancelled: the shell's codes for the signal (128+N), and
	// SIGPIPE's for a standard output whose reader went away.
	exitHangup       = 128 + int(syscall.SIGHUP)
	exitQuit         = 128 + int(syscall.SIGQUIT)
	exitOutputClosed = 128 + int(syscall.SIGPIPE)
	// exitNotStored: the turn went well but subagent cards could not be
	// stored (the line before it says how many and why).
	exitNotStored = 4
)

func main() {
	// Agents run under a guard process (this binary, re-executed), so that
	// nothing they start survives acpscope, even when it is SIGKILLed.
	procguard.EnableGuardProcess()
	ctx, end := context.WithCancelCause(context.Background())
	in := &interrupter{}
	outputClosed := func() { end(&session.Ending{What: "standard output closed", Code: exitOutputClosed}) }
	stdout := &watchedOutput{w: os.Stdout, closed: outputClosed}
	stopSignals := func() {}
	if len(os.Args) < 2 || !ownsSignals[os.Args[1]] {
		stopSignals = watchSignals(end, in)
		watchOutputGone(os.Stdout, outputClosed)
	}
	code := runEnv(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: stdout, stderr: os.Stderr, interrupts: in})
	stopSignals()
	end(nil)
	os.Exit(code)
}

// ownsSignals are the commands that handle the ending signals and the end
// of their standard output themselves, so main watches neither: the tap
// forwards the signals to its agent and ends in its own order (cmdTap),
// which watchSignals' reset to the default action after the first signal
// would cut short at the second (acpscope run's process guard sends
// SIGTERM to the tap's group and to the tap); and a standard output whose
// reader went away is the tap's to pass on to its agent, which then ends
// the tap as it chooses.
var ownsSignals = map[string]bool{"tap": true}

// env is what a subcommand may touch: its arguments and the process's
// standard streams. Tests substitute all of them.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// interrupts hands Ctrl-C to the running interactive turn; nil when
	// signals only end the session (tests, or no terminal).
	interrupts *interrupter
}

// runEnv dispatches a command line in the environment e and returns the
// exit code.
func runEnv(ctx context.Context, args []string, e env) int {
	// Everything on standard error (error messages, the connection log, the
	// agent's own stderr) may carry agent bytes: it passes the sanitiser.
	safeErr := safetext.NewWriter(e.stderr)
	defer safeErr.Close()
	e.stderr = safeErr
	stderr, stdout := e.stderr, e.stdout
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(ctx, e, args[1:])
	case "replay":
		err = cmdReplay(ctx, e, args[1:])
	case "tap":
		err = cmdTap(ctx, e, args[1:])
	case "subagents":
		err = cmdSubagents(ctx, e, args[1:])
	case "sessions":
		err = cmdSessions(ctx, e, args[1:])
	case "web":
		err = cmdWeb(ctx, e, args[1:])
	case "health":
		err = cmdHealth(ctx, e, args[1:])
	case "migrate":
		err = cmdMigrate(ctx, e, args[1:])
	case "cursor":
		err = cmdCursor(ctx, e, args[1:])
	case "export":
		err = cmdExport(ctx, e, args[1:])
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "acpscope: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return exitCode(ctx, err, stderr)
}

// exitCode reports err and maps it to an exit code. The tap's ending (an
// *exitStatus: its agent's status, or the editor's stop signal) has its own
// code. A run ended by a signal or a closed standard output (ctx's cause is a session.Ending) exits
// with that ending's code when it was cancelled or had nothing else to
// report.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	var st *exitStatus
	if errors.As(err, &st) { // the tap's ending: its agent's, or a signal's
		fmt.Fprintf(stderr, "acpscope: %v\n", err)
		return st.code
	}
	var s *session.Ending
	if errors.As(context.Cause(ctx), &s) && (err == nil || errors.Is(err, session.ErrCancelled)) {
		if err != nil {
			fmt.Fprintf(stderr, "acpscope: %v\n", err)
		}
		return s.Code
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, session.ErrCancelled):
		fmt.Fprintf(stderr, "acpscope: %v\n", err)
		return exitCancelled
	case errors.As(err, new(*notStoredError)):
		fmt.Fprintf(stderr, "acpscope: %v\n", err)
		return exitNotStored
	case errors.Is(err, session.ErrTurn):
		fmt.Fprintf(stderr, "acpscope: %v\n", err)
		return exitTurn
	default:
		fmt.Fprintf(stderr, "acpscope: %v\n", err)
		return exitUsage
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `acpscope runs, records and replays ACP sessions with subagent cards.

Usage:
  acpscope run [flags] -- <agent command…>    drive an ACP agent over stdio, turn by turn
  acpscope replay [flags] [CAPTURE]           replay a capture (the bundled demo without one)
  acpscope tap [flags] -- <agent command…>    the editor's agent command: pass the connection through, observing it
  acpscope subagents --session ID [--json]    list stored subagent contexts of a session, with results
  acpscope sessions [--db DSN] [--json]       list recent stored sessions (id, agent, started, cards, status)
  acpscope web [--db DSN] [--addr ADDR]       browse stored sessions as subagent trees and timelines
  acpscope health [--db DSN]                  run the persistence health check
  acpscope migrate [--dry-run] [--db DSN]     bring the database up to date (--dry-run: print the plan)
  acpscope export --session ID [--otlp URL]   send a stored session to an OpenTelemetry collector as a trace
  acpscope cursor doctor                      report Cursor CLI discovery and compatibility

Run 'acpscope <command> -h' for the flags of a command.
Exit codes: 0 ok, 1 agent or turn failure (a reopen the agent refused
included), 2 usage or input error,
3 turn cancelled (--timeout, SIGINT or SIGTERM), 4 subagent cards not stored,
129 SIGHUP, 131 SIGQUIT, 141 standard output closed (the running turn
cancelled first). tap exits as its agent did (its code, or 128+signal).
`)
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("acpscope "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
