// Builds the wire harness against our SDK in ../../sdk
// (GOWORK=off go build -modfile=fork.mod). go.mod is the same file, so a plain
// `go build` in this directory never links upstream.
module github.com/kdlbs/acp-go-sdk/conformance/wire

go 1.26

require (
	github.com/coder/acp-go-sdk v0.13.5
	github.com/google/go-cmp v0.7.0
)

replace github.com/coder/acp-go-sdk => ../../sdk
