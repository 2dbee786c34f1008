// Package traces exports acpscope's sessions as OpenTelemetry traces over
// OTLP/HTTP, in the GenAI semantic conventions (pinned: SemconvVersion):
// each ACP session is a trace, each turn an invoke_agent span, each tool
// call an execute_tool span, each subagent an invoke_agent span under the
// tool call that launched it, with the child session's tool calls below.
// Permission requests and their answers are events of the tool call's span
// (of the turn's when the tool call is unknown).
//
// Span and trace ids are derived from (session, turn, tool call), so a
// replay of a capture and an export of the stored session give the same
// ids, and a second export does not add spans a backend keeps apart.
//
// The export never sets the pace: spans are queued in a bounded queue (a
// full queue drops, counted), sent in batches by one goroutine, and the
// shutdown is bounded (ShutdownWait); Report says what was dropped.
//
// Live sessions feed an Exporter through Event, TurnStarted, TurnEnded and
// Permission (the TurnObserver calls, which the store sink gets too, so
// that the store keeps the turns and tool calls); stored sessions go
// through ExportStored. Both build the same
// span records (record.go) and emit them with one function (emit).
package traces
