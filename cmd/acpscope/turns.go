package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// promptList is the repeatable --prompt flag: one turn per value, in order.
type promptList []string

// String renders the prompts for the flag package.
func (p *promptList) String() string { return strings.Join(*p, " | ") }

// Set adds one prompt; an empty one is refused (it would be no turn).
func (p *promptList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("a prompt must not be empty")
	}
	*p = append(*p, v)
	return nil
}

// promptSource is where the turns' prompts come from: the --prompt values;
// else, on a terminal, one line per turn (interactive, see readPrompts);
// else standard input, read to its end, as one prompt. A run that resumes
// a session may have no prompt (it only reopens the session).
func promptSource(ctx context.Context, e env, prompts promptList, resuming bool) (turns iter.Seq[string], interactive bool, err error) {
	if len(prompts) > 0 {
		return slices.Values([]string(prompts)), false, nil
	}
	if isCharDevice(e.stdin) {
		return readPrompts(ctx, e.stdin, e.stdout), true, nil
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
		return slices.Values([]string{text}), false, nil
	case resuming:
		return slices.Values([]string(nil)), false, nil
	}
	return nil, false, fmt.Errorf("no prompt: pass --prompt or write it to standard input")
}

// promptMark is shown on the terminal before each interactive prompt line.
const promptMark = "› "

// readPrompts yields one prompt per line typed on the terminal in, asking
// with promptMark on out; blank lines ask again, and end of input (Ctrl-D)
// or the session's end (a signal while no turn runs) ends the session. A
// line is asked for only once the previous turn is over.
func readPrompts(ctx context.Context, in io.Reader, out io.Writer) iter.Seq[string] {
	return func(yield func(string) bool) {
		type line struct {
			text string
			err  error
		}
		lines := make(chan line, 1)
		ask := make(chan struct{})
		// The reader blocks on the terminal; it reads a line only when
		// asked, so nothing typed during a turn is taken before its time.
		go func() {
			r := bufio.NewReaderSize(in, 64<<10)
			for range ask {
				text, err := r.ReadString('\n')
				lines <- line{text, err}
				if err != nil {
					return
				}
			}
		}()
		defer close(ask)
		for {
			fmt.Fprint(out, promptMark)
			ask <- struct{}{}
			var l line
			select {
			case l = <-lines:
			case <-ctx.Done():
				fmt.Fprintln(out)
				return
			}
			if len(l.text) > maxPromptBytes {
				fmt.Fprintf(out, "\nacpscope: a prompt may be at most %d bytes; not sent\n", maxPromptBytes)
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
