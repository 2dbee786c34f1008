package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// stepList is the run's steps given by flags, in the order typed: each
// --prompt is one turn, each --queue a turn queued behind the prompt
// before it (see queueFlag), each --reload reopens the session on the
// same connection (see reopenFlag).
type stepList []session.Request

// prompts counts the steps that are turns, queued ones included.
func (s stepList) prompts() int {
	n := 0
	for _, r := range s {
		if r.Method == acp.AgentMethodSessionPrompt {
			n += 1 + len(r.Queue)
		}
	}
	return n
}

// promptFlag is the repeatable --prompt flag: one turn per value, in order.
type promptFlag struct{ steps *stepList }

// String renders the prompts for the flag package.
func (p promptFlag) String() string {
	if p.steps == nil {
		return ""
	}
	var texts []string
	for _, r := range *p.steps {
		if r.Method == acp.AgentMethodSessionPrompt {
			texts = append(texts, r.Text)
			for _, q := range r.Queue {
				texts = append(texts, q.Text)
			}
		}
	}
	return strings.Join(texts, " | ")
}

// Set adds one prompt; an empty one is refused (it would be no turn).
func (p promptFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("a prompt must not be empty")
	}
	*p.steps = append(*p.steps, session.Request{Method: acp.AgentMethodSessionPrompt, Text: v})
	return nil
}

// queueFlag is the repeatable --queue flag: a turn sent right after the
// --prompt before it (and the --queue flags between), without waiting
// for its answer, for agents that queue prompts (Claude's
// promptQueueing). Its answer is awaited after theirs, in order.
type queueFlag struct{ steps *stepList }

// String is empty: the queued prompts show in --prompt's value.
func (queueFlag) String() string { return "" }

// Set queues one prompt behind the last --prompt; one that follows no
// --prompt (or a --reload) is refused, and so are an empty one and more
// than session.MaxQueued behind one prompt.
func (q queueFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("a prompt must not be empty")
	}
	n := len(*q.steps)
	if n == 0 || (*q.steps)[n-1].Method != acp.AgentMethodSessionPrompt {
		return errors.New("--queue queues a prompt behind the --prompt before it: put a --prompt first")
	}
	last := &(*q.steps)[n-1]
	if len(last.Queue) >= session.MaxQueued {
		return fmt.Errorf("at most %d prompts queue behind one --prompt", session.MaxQueued)
	}
	last.Queue = append(last.Queue, session.Request{Method: acp.AgentMethodSessionPrompt, Text: v})
	return nil
}

// reopenFlag is the repeatable boolean --reload flag: where it stands
// among the --prompt flags, the run reopens its session on the same
// connection (session/load or session/resume, as --resume-with says),
// so the agent replays the history of the turns before it.
type reopenFlag struct{ steps *stepList }

// String is empty: the flag has no value of its own.
func (reopenFlag) String() string { return "" }

// IsBoolFlag lets --reload stand without a value.
func (reopenFlag) IsBoolFlag() bool { return true }

// Set adds one reopening step; --reload=false adds none.
func (r reopenFlag) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("--reload takes no value")
	}
	if on {
		*r.steps = append(*r.steps, session.Request{Method: session.MethodReopen})
	}
	return nil
}

// promptSource is where the turns come from: the steps the flags gave;
// else, on a terminal, one prompt line per turn (interactive, see
// readPrompts); else standard input, read to its end, as one prompt. A
// run that resumes a session may have no prompt (it only reopens the
// session).
func promptSource(ctx context.Context, e env, steps stepList, resuming bool) (turns iter.Seq[session.Request], interactive bool, err error) {
	if len(steps) > 0 {
		return slices.Values([]session.Request(steps)), false, nil
	}
	if isTerminal(e.stdin) {
		return promptRequests(readPrompts(ctx, e.stdin, e.stdout)), true, nil
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, maxPromptBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("reading the prompt from standard input: %v", err)
	}
	if len(data) > maxPromptBytes {
		return nil, false, fmt.Errorf("the prompt on standard input is larger than %d bytes", maxPromptBytes)
	}
	text := strings.TrimSpace(string(data))
	switch {
	case text != "":
		return promptRequests(slices.Values([]string{text})), false, nil
	case resuming:
		return slices.Values([]session.Request(nil)), false, nil
	}
	return nil, false, fmt.Errorf("no prompt: pass --prompt or write it to standard input")
}

// promptRequests makes each prompt text one turn.
func promptRequests(texts iter.Seq[string]) iter.Seq[session.Request] {
	return func(yield func(session.Request) bool) {
		for text := range texts {
			if !yield(session.Request{Method: acp.AgentMethodSessionPrompt, Text: text}) {
				return
			}
		}
	}
}

// promptMark is shown on the terminal before each interactive prompt line.
const promptMark = "› "

// readPrompts yields one prompt per line typed on the terminal in, asking
// with promptMark on out; blank lines ask again, and end of input (Ctrl-D)
// or the session's end (a signal while no turn runs) ends the session. A
// line is asked for only once the previous turn is over. While it is
// asked for, the terminal is in the line editor's mode (see lineEditor),
// so a line is read whole up to maxPromptBytes; a longer one is not sent.
func readPrompts(ctx context.Context, in io.Reader, out io.Writer) iter.Seq[string] {
	return func(yield func(string) bool) {
		type line struct {
			text string
			err  error
		}
		// The editor echoes on the terminal: standard output when it is
		// one, else the terminal typed at.
		echo := out
		if w, ok := in.(io.Writer); ok && !isTerminal(out) {
			echo = w
		}
		edit := false
		if restore := lineMode(in); restore != nil {
			restore()
			edit = true
		}
		lines := make(chan line, 1)
		ask := make(chan struct{})
		// The reader blocks on the terminal; it reads a line only when
		// asked, so nothing typed during a turn is taken before its time.
		go func() {
			r := bufio.NewReaderSize(in, 64<<10)
			ed := &lineEditor{in: r, echo: echo, max: maxPromptBytes, mark: promptMark}
			for range ask {
				var l line
				if edit {
					l.text, l.err = ed.readLine()
				} else {
					l.text, l.err = r.ReadString('\n')
					if l.err == nil && len(l.text) > maxPromptBytes {
						l.err = errLineTooLong
					}
				}
				lines <- l
				if l.err != nil && l.err != errLineTooLong {
					return
				}
			}
		}()
		defer close(ask)
		for {
			restore := func() {}
			if edit {
				if r := lineMode(in); r != nil {
					fmt.Fprint(echo, pasteOn)
					restore = func() { fmt.Fprint(echo, pasteOff); r() }
				}
			}
			fmt.Fprint(out, promptMark)
			ask <- struct{}{}
			var l line
			select {
			case l = <-lines:
				restore()
			case <-ctx.Done():
				restore()
				fmt.Fprintln(out)
				return
			}
			if l.err == errLineTooLong {
				fmt.Fprintf(out, "acpscope: a prompt may be at most %d bytes; not sent\n", maxPromptBytes)
				continue
			}
			if text := strings.TrimSpace(l.text); text != "" {
				if !yield(text) {
					return
				}
			}
			if l.err != nil {
				fmt.Fprintln(out)
				return
			}
		}
	}
}

// reportTurn tells the interactive user how a turn ended, before the next
// prompt line.
func reportTurn(e env, term *view.Terminal, n int, stop acp.StopReason, err error) {
	term.Flush()
	if err != nil {
		fmt.Fprintf(e.stdout, "\nturn %d: %s\n", n, safetext.Text(err.Error()))
		return
	}
	fmt.Fprintf(e.stdout, "\nturn %d ended: %s\n", n, safetext.Text(string(stop)))
}
