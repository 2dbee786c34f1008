// The wire harness module; identical to fork.mod (links ../../sdk).
module github.com/kdlbs/acp-go-sdk/conformance/wire

go 1.26

require (
	github.com/coder/acp-go-sdk v0.13.5
	github.com/google/go-cmp v0.7.0
)

replace github.com/coder/acp-go-sdk => ../../sdk
