// Builds the harness against this repository's SDK (sdk/).
module acpbench

go 1.24

require github.com/coder/acp-go-sdk v0.13.5

replace github.com/coder/acp-go-sdk => ../../sdk
