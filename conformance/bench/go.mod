// The default build uses this repository's SDK; compare.sh selects
// fork.mod or upstream.mod with -modfile.
module acpbench

go 1.24

require github.com/coder/acp-go-sdk v0.13.5

replace github.com/coder/acp-go-sdk => ../../sdk
