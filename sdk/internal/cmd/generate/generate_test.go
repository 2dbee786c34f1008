package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const sdkDir = "../../.."

// The committed files are exactly what the generator writes (the CI also
// regenerates and diffs; this catches drift in `go test`).
func TestCommittedFilesUpToDate(t *testing.T) {
	files, err := generate(filepath.Join(sdkDir, "schema"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(files) {
		got, err := os.ReadFile(filepath.Join(sdkDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s is stale: run make generate", name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, err := generate(filepath.Join(sdkDir, "schema"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		b, err := generate(filepath.Join(sdkDir, "schema"))
		if err != nil {
			t.Fatal(err)
		}
		for name := range a {
			if !bytes.Equal(a[name], b[name]) {
				t.Fatalf("%s differs between runs", name)
			}
		}
	}
}

func TestExportName(t *testing.T) {
	for in, want := range map[string]string{
		"_meta":              "Meta",
		"in_progress":        "InProgress",
		"utf-16":             "Utf16",
		"document/didChange": "DocumentDidChange",
		"sessionId":          "SessionId",
		"Parse error":        "ParseError",
		"searchAndReplace":   "SearchAndReplace",
	} {
		if got := exportName(in); got != want {
			t.Errorf("exportName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVariantNames(t *testing.T) {
	in, err := loadInputs(filepath.Join(sdkDir, "schema"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	// Names other packages build on (docs/architecture.md) and irregular
	// v0.13.5 names that follow from the naming rules.
	for union, want := range map[string]map[string]string{
		"SessionUpdate": {
			"ToolCall": "SessionUpdateToolCall", "ToolCallUpdate": "SessionToolCallUpdate",
			"SessionInfoUpdate": "SessionSessionInfoUpdate", "SubagentUpdate": "SessionSubagentUpdate",
			"SessionMessage": "SessionUpdateSessionMessage", "SessionMessageChunk": "SessionUpdateSessionMessageChunk",
		},
		"McpServer":         {"Http": "McpServerHttpInline", "Stdio": "McpServerStdio"},
		"UnstableMcpServer": {"Http": "UnstableMcpServerHttp", "Acp": "UnstableMcpServerAcpInline"},
		"AgentResponse":     {"Result": "AgentResult", "Error": "AgentError"},
		"StateUpdate":       {"Running": "StateUpdateRunning", "Idle": "StateUpdateIdle", "Other": "StateUpdateOther"},
		"ToolCallContent":   {"Session": "ToolCallContentSession"},
	} {
		u := m.types[union]
		if u == nil || u.Union == nil {
			t.Fatalf("%s is not a union", union)
		}
		got := map[string]string{}
		for _, v := range u.Union.Variants {
			got[v.Field] = v.TypeName
		}
		for field, typ := range want {
			if got[field] != typ {
				t.Errorf("%s.%s is %q, want %q", union, field, got[field], typ)
			}
		}
	}
}
