package adapter

import (
	"strings"
	"testing"
)

// FuzzClaimAnswerRun checks the held-text judgement on any chunks and
// answer: what it claims is one contiguous run whose concatenation,
// trimmed, is the trimmed answer, and it claims one whenever a run of
// whole chunks, starting at the first chunk, is exactly the answer.
func FuzzClaimAnswerRun(f *testing.F) {
	f.Add("All subagents reported.\x00ANSWER-ALPHA", "ANSWER-ALPHA")
	f.Add("Done. \x00TH\x00IRD\x00\n\x00tail", "THIRD")
	f.Add(" \x00 a\x00b \x00c", " ab ")
	f.Add("aa\x00aa\x00aa", "aaa")
	f.Fuzz(func(t *testing.T, joined, answer string) {
		chunks := strings.Split(joined, "\x00")
		owners := make([]string, len(chunks))
		claimAnswerRun(owners, chunks, ChildAnswer{ToolCallID: "L", Text: answer})
		first, last := -1, -1
		for k, o := range owners {
			if o == "" {
				continue
			}
			if first < 0 {
				first = k
			} else if k != last+1 {
				t.Fatalf("%q: claimed %q, not one run", chunks, owners)
			}
			last = k
		}
		want := strings.TrimSpace(answer)
		if first >= 0 && strings.TrimSpace(strings.Join(chunks[first:last+1], "")) != want {
			t.Fatalf("%q: claimed %q for %q", chunks, owners, want)
		}
		if first < 0 && want != "" && strings.TrimSpace(chunks[0]) != "" {
			for k := range chunks {
				if strings.Join(chunks[:k+1], "") == want {
					t.Fatalf("%q: the run 0..%d is the answer %q, nothing claimed", chunks, k, want)
				}
			}
		}
	})
}

// BenchmarkClaimAnswerRun is the judgement's worst case the bounds allow:
// 4,096 held chunks of 16 bytes (64 KiB) of one repeated byte and an
// answer of half that which matches at every start but ends inside a
// chunk, so every start costs a full comparison.
func BenchmarkClaimAnswerRun(b *testing.B) {
	chunks := make([]string, 4096)
	for k := range chunks {
		chunks[k] = strings.Repeat("a", 16)
	}
	answer := ChildAnswer{ToolCallID: "L", Text: strings.Repeat("a", 32<<10+1)}
	owners := make([]string, len(chunks))
	for b.Loop() {
		claimAnswerRun(owners, chunks, answer)
	}
}
