package replay

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzServe plays an arbitrary capture against a client that sends
// initialize, session/new and session/prompt and answers every request the
// script sends with {}. The script must answer all three requests (in any
// order: requests that arrive while it waits on the client get their
// fallback at once), write
// only JSON objects, and return nil once the client closes: never panic,
// never hang (a generous guard turns a hang into a failure).
func FuzzServe(f *testing.F) {
	f.Add(script)
	f.Add(`{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"method":"x/y"}}` + "\n" + `{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{}}}`)
	f.Add(`{"from":"client","msg":{"jsonrpc":"2.0","id":1.0,"method":"session/prompt"}}` + "\n" + `{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		c, err := capture.Read(strings.NewReader(text))
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		toAgent, clientW := io.Pipe()
		clientR, fromAgent := io.Pipe()
		served := make(chan error, 1)
		go func() {
			served <- NewAgent(c).Serve(ctx, toAgent, fromAgent)
			fromAgent.Close()
		}()

		// Writes never block the reader below: answers go out on their own
		// goroutines, serialised so lines never interleave.
		var wmu sync.Mutex
		var writers sync.WaitGroup
		write := func(line string) {
			wmu.Lock()
			defer wmu.Unlock()
			_, _ = io.WriteString(clientW, line+"\n")
		}
		answered := map[string]bool{}
		allAnswered := make(chan struct{})
		all := false
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			br := bufio.NewReader(clientR)
			for {
				line, err := br.ReadString('\n')
				if strings.TrimSpace(line) != "" {
					m, perr := capture.ParseMessage([]byte(line))
					switch {
					case perr != nil:
						t.Errorf("the script wrote a line that is not a JSON object: %q", line)
					case m.IsRequest():
						writers.Add(1)
						go func() {
							defer writers.Done()
							write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
						}()
					case m.IsResponse():
						answered[capture.IDKey(m.ID)] = true
						if answered["1"] && answered["2"] && answered["3"] && !all {
							all = true
							close(allAnswered)
						}
					}
				}
				if err != nil {
					return
				}
			}
		}()

		for _, req := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
			`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`,
			`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`,
		} {
			write(req)
		}
		select {
		case <-allAnswered:
		case err := <-served:
			t.Fatalf("Serve returned before the client closed: %v", err)
		case <-ctx.Done():
			t.Fatal("hang guard: the script did not answer the client's three requests")
		}
		clientW.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("hang guard: Serve did not return after the client closed")
		}
		<-readDone
		writers.Wait()
	})
}
