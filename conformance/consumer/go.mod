// A stand-in for a consumer such as Kandev: it requires upstream's module
// path and version and swaps in our SDK with a directory replace, exactly
// as a consumer's go.mod would (issue 2 acceptance).
module example.com/acpconsumer

go 1.26

require github.com/coder/acp-go-sdk v0.13.5

replace github.com/coder/acp-go-sdk => ../../sdk
