// Command publishcheck proves that the repository can be published as Go
// modules: the root module and the SDK module pass the module zip rules
// (golang.org/x/mod/zip: reserved names such as aux or com1, invalid
// characters, case-insensitive collisions, size limits), and a consumer
// module that fetches the root module through a module proxy builds.
//
// The proxy is a directory in the GOPROXY file layout, built from the files
// git tracks (plus untracked files git does not ignore) in the working tree,
// so the check sees what a tag would publish. The consumer does what the
// repository's README tells a real consumer to do: it requires
// github.com/kdlbs/acp-go-sdk and replaces github.com/coder/acp-go-sdk with
// the SDK module, published from the sdk/ directory of this repository
// (tag sdk/vX.Y.Z, module path github.com/kdlbs/acp-go-sdk/sdk, whose go.mod
// declares the upstream path it stands in for).
//
// Usage, from the repository root (make publish-check):
//
//	cd internal/tools/publishcheck && go run . -repo ../../..
//
// The version served is named after the content of both modules, so the
// regular module cache can never hand an earlier tree's copy to the
// consumer; the check removes that version from the cache when it is done.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	repo := flag.String("repo", ".", "the repository root")
	version := flag.String("version", "", "the version the proxy serves both modules at (default: one named after the content)")
	keep := flag.String("proxy", "", "write the proxy to this directory and keep it (default: a temporary directory)")
	flag.Parse()
	if err := run(*repo, *version, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "publishcheck:", err)
		os.Exit(1)
	}
	fmt.Println("publishcheck: ok")
}
