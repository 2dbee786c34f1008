// Package acpbench measures an ACP Go SDK. The same file is built against
// upstream github.com/coder/acp-go-sdk v0.13.5 (upstream.mod) and against
// this repository's sdk/ (fork.mod), so it uses only API both provide.
//
// The benchmarks live in its test file; compare.sh runs them against both
// builds side by side (make bench-compare).
package acpbench
