// Builds the harness against upstream github.com/coder/acp-go-sdk v0.13.5.
module acpbench

go 1.24

require github.com/coder/acp-go-sdk v0.13.5
