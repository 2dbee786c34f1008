// Builds the wire harness against the real upstream SDK, fetched by the Go
// toolchain. Only conformance/run.sh uses it (GOWORK=off go build -modfile=upstream.mod).
module github.com/kdlbs/acp-go-sdk/conformance/wire

go 1.26

require (
	github.com/coder/acp-go-sdk v0.13.5
	github.com/google/go-cmp v0.7.0
)
