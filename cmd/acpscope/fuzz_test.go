package main

import (
	"bytes"
	"testing"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzCheckCapture reads any bytes as a capture and checks it for replay:
// neither may panic, and a capture that passes holds at least one message.
func FuzzCheckCapture(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte(`{"capture":{"version":1}}` + "\n"))
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"one"}}}`))
	f.Add([]byte(`{"from":"client","msg":{"jsonrpc":"2.0","id":"a","method":"session/prompt","params":{}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":"a","result":{"stopReason":7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := capture.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if checkCapture(c) == nil && len(c.Entries) == 0 {
			t.Fatal("an empty capture passed the check")
		}
	})
}
