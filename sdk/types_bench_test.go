package acp

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeParamsToolCallUpdate is the inbound dispatch path: params
// bytes straight into the one-pass decoder (no encoding/json validation pass).
func BenchmarkDecodeParamsToolCallUpdate(b *testing.B) {
	data := json.RawMessage(benchToolCallUpdateJSON)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		var n SessionNotification
		if err := decodeParams(data, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeToolCallUpdateGeneralPath decodes with the fast path off,
// i.e. encoding/json plus the generated general-path codecs, for comparison.
func BenchmarkDecodeToolCallUpdateGeneralPath(b *testing.B) {
	fastDecodeOff.Store(true)
	defer fastDecodeOff.Store(false)
	benchmarkDecodeNotification(b, benchToolCallUpdateJSON)
}
