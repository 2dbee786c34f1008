// Command peeragent serves the conformance peer agent on stdin/stdout, for
// the TypeScript client peer to spawn as it would spawn any ACP agent.
package main

import (
	"log/slog"
	"os"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/conformance/internal/peeragent"
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	a := &peeragent.Agent{}
	conn := acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.SetConn(conn)
	<-conn.Done()
}
