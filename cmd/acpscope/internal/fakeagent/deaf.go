package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// deaf is an agent written without the SDK, so that it can stop reading
// its standard input: it answers initialize and session/new, and on
// session/prompt opens a subagent card, asks the client to read file 64
// times (each answer as large as the file) and never reads again. A client
// that answers fills the pipe and its writes block until the agent dies.
func deaf(file, ready string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
				"protocolVersion": 1, "authMethods": []any{},
				"agentInfo": map[string]any{"name": "@agentclientprotocol/claude-agent-acp", "version": "0.101.0"},
			}})
		case "session/new":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"sessionId": "deaf"}})
		case "session/prompt":
			send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "deaf", "update": map[string]any{
				"sessionUpdate": "tool_call", "toolCallId": "toolu_LONG", "title": "Long task", "kind": "think", "status": "in_progress",
				"rawInput": map[string]any{"description": "Long task", "subagent_type": "general-purpose"},
				"_meta":    map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}},
			}}})
			for i := range 64 {
				send(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("read-%d", i), "method": "fs/read_text_file",
					"params": map[string]any{"sessionId": "deaf", "path": file}})
			}
			markReady(ready)
			for { // never reads standard input again
				time.Sleep(time.Hour)
			}
		}
	}
}
