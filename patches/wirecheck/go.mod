module github.com/kdlbs/acp-go-sdk/patches/wirecheck

go 1.26

require github.com/coder/acp-go-sdk v0.13.5

replace github.com/coder/acp-go-sdk => ../../sdk
