package traces

import (
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// ParseTraceparent reads a W3C traceparent value (version 00, or a later
// version read as 00 prescribes); ok is false for anything else, and for
// all-zero ids. It never fails otherwise: the value came from a peer.
func ParseTraceparent(v string) (sc trace.SpanContext, ok bool) {
	v = strings.TrimSpace(v)
	if len(v) < 55 || (len(v) > 55 && v[55] != '-') {
		return sc, false
	}
	if v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return sc, false
	}
	ver, err := hex.DecodeString(v[0:2])
	if err != nil || ver[0] == 0xff || (ver[0] == 0 && len(v) != 55) {
		return sc, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if !decodeLowerHex(tid[:], v[3:35]) || !decodeLowerHex(sid[:], v[36:52]) || !decodeLowerHex(flags[:], v[53:55]) {
		return sc, false
	}
	if !tid.IsValid() || !sid.IsValid() {
		return sc, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true,
	}), true
}

// decodeLowerHex decodes s (lower-case hex only, as W3C requires) into dst.
func decodeLowerHex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// FormatTraceparent is the W3C traceparent of sc (version 00).
func FormatTraceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
