package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/stream"
)

func FuzzParseModelList(f *testing.F) {
	f.Add([]byte(fakeModelList))
	f.Add([]byte("Available models\n\n-rf - evil\nx - y (default)\nTip: x\n"))
	f.Add([]byte("\x1b]0;title\x07a - b (current)\r\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		models := ParseModelList(out)
		seen := map[string]bool{}
		defaults := 0
		for _, m := range models {
			if ValidateModel(m.ID, nil) != nil || strings.HasPrefix(m.ID, "-") {
				t.Fatalf("invalid id accepted: %q", m.ID)
			}
			if seen[m.ID] {
				t.Fatalf("duplicate id %q", m.ID)
			}
			seen[m.ID] = true
			if m.Router != (m.ID == "auto") {
				t.Fatalf("router flag wrong for %q", m.ID)
			}
			if m.Default {
				defaults++
			}
		}
		if len(models) > MaxAuxOutputLines {
			t.Fatalf("%d models exceed the line bound", len(models))
		}
	})
}

// FuzzBoundJSON checks that bounded tool payloads stay valid JSON within
// their cap.
func FuzzBoundJSON(f *testing.F) {
	f.Add([]byte(`{"content":"`+strings.Repeat("x", 300)+`","totalLines":40}`), 128)
	f.Add([]byte(`[1,2,3]`), 4)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if !json.Valid(raw) || n < 32 || n > 1<<20 {
			return
		}
		out := boundJSON(raw, n)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", raw, out)
		}
		if len(raw) > n && len(out) > n {
			t.Fatalf("bounded to %d bytes, cap %d", len(out), n)
		}
	})
}

// FuzzTurnLines feeds a stdout transcript (one stream-json line per line)
// to the runner's state machine, without a process, the way its loop does:
// blank lines skipped, nothing judged after a valid result, the first kill
// ends the turn. Whatever the CLI prints, events and the result must encode,
// hold valid UTF-8 within their caps, and the failure detail stays on one
// line.
func FuzzTurnLines(f *testing.F) {
	f.Add([]byte(strings.Join([]string{lineInit, lineEcho, lineThinking, lineThinkDone, lineReadStart, lineReadDone,
		lineShellStart, lineShellRej, lineAssistant, lineResultOK}, "\n")))
	f.Add([]byte(lineInit + "\n" + lineResultErr))
	f.Add([]byte(lineInit + "\n" + `{"type":"tool_call","subtype":"completed","call_id":"e","tool_call":{"editToolCall":{"args":{"path":"é"},"result":{"success":{"diffString":"ééééééééééééééééééééééééééééééééééééééééé"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []Event
		lim := Limits{MaxSegmentBytes: 64, MaxToolPayloadBytes: 96, MaxDiffBytes: 48, MaxFinalBytes: 64,
			MaxAggregateBytes: 1024, MaxCallIDs: 3}
		tr := newTurnRun(lim, &evs)
		for _, line := range bytes.Split(data, []byte("\n")) {
			if tr.terminal || stream.IsBlank(line) {
				continue
			}
			if tr.handleLine(line) == actKill {
				break
			}
		}
		tr.classify()
		lim = tr.lim
		if len(tr.calls) > lim.MaxCallIDs || len(tr.calls) != len(tr.callOrder) || tr.emitted > lim.MaxAggregateBytes {
			t.Fatalf("state out of bounds: %d calls, %d ordered, %d bytes emitted", len(tr.calls), len(tr.callOrder), tr.emitted)
		}
		const marker = 48 // room for the truncation marker
		truncated := 0
		for _, ev := range evs {
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("event does not encode: %v", err)
			}
			if ev.Kind == EventTruncated {
				truncated++
			}
			strs := []string{ev.SessionID, ev.Text, ev.Status}
			if len(ev.Text) > lim.MaxSegmentBytes+marker && ev.Kind != EventTruncated {
				t.Fatalf("%s text of %d bytes", ev.Kind, len(ev.Text))
			}
			if tool := ev.Tool; tool != nil {
				strs = append(strs, tool.CallID, tool.Name, tool.Key, tool.Outcome, tool.Path, tool.Command, tool.Diff)
				for _, p := range []json.RawMessage{tool.Args, tool.Output} {
					if len(p) > lim.MaxToolPayloadBytes || (len(p) > 0 && !json.Valid(p)) {
						t.Fatalf("tool payload out of bounds: %q", p)
					}
				}
				if len(tool.Diff) > lim.MaxDiffBytes+marker || len(tool.Path) > 4096+marker || len(tool.Command) > 4096+marker {
					t.Fatalf("tool strings out of bounds: %+v", tool)
				}
			}
			for _, s := range strs {
				if !utf8.ValidString(s) {
					t.Fatalf("%s event holds invalid UTF-8: %q", ev.Kind, s)
				}
			}
		}
		if truncated > 1 {
			t.Fatalf("%d truncation events", truncated)
		}
		res := tr.res
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		if res.IsError == res.Success() || (res.IsError && res.FinalText != "") || len(res.FinalText) > lim.MaxFinalBytes+marker {
			t.Fatalf("inconsistent result: class %s, is_error %t, final %d bytes", res.Class, res.IsError, len(res.FinalText))
		}
		if strings.ContainsAny(res.Detail, "\r\n") {
			t.Fatalf("detail spans lines: %q", res.Detail)
		}
		for _, s := range []string{res.Detail, res.RequestID, res.SessionID, res.Model, res.FinalText} {
			if !utf8.ValidString(s) {
				t.Fatalf("result holds invalid UTF-8: %q", s)
			}
		}
	})
}

// FuzzProbeOutput checks the compatibility probe's reading of --help and
// --version output: the verdict is consistent, and the version (shown by
// health, the catalog and `acpscope cursor doctor`) is one short printable
// line.
func FuzzProbeOutput(f *testing.F) {
	f.Add([]byte(compatibleHelp), []byte("2026.08.11-e8db854\n"))
	f.Add([]byte(modelsSubcommandHelp), []byte("\x1b[1mv1\x1b[0m\r\n"))
	f.Add([]byte(legacyHelp), []byte("\n\n  2026.1\n"))
	f.Fuzz(func(t *testing.T, help, version []byte) {
		v := checkHelp(StripANSI(string(help)))
		if v.compatible != (len(v.missing) == 0) || (v.compatible && len(v.listModels) == 0) {
			t.Fatalf("inconsistent verdict %+v", v)
		}
		got := probeVersion(version)
		// stream.Excerpt keeps 64 bytes; its longest escape, `\ufffd` for
		// an invalid byte, is 6 bytes long.
		if len(got) > 6*64 || !utf8.ValidString(got) {
			t.Fatalf("version %q", got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("version holds a control character: %q", got)
			}
		}
	})
}
