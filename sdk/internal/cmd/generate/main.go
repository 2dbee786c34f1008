// Command generate writes the SDK's generated files from the ACP JSON
// schemas in sdk/schema: types_gen.go (declarations), codec_gen.go
// (MarshalJSON, UnmarshalJSON), fastdecode_gen.go (the one-pass decoders),
// constants_gen.go, helpers_gen.go, client_gen.go and agent_gen.go. Run it
// from the sdk directory:
//
//	go run ./internal/cmd/generate
//
// It loads the schemas, builds a model of Go types and methods, and emits
// gofmt-ed source. The output depends only on the schema files, so running it
// twice gives identical bytes; CI regenerates and fails on any diff.
package main

import (
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
)

func main() {
	schemaDir := flag.String("schema", "schema", "directory holding the schema files")
	outDir := flag.String("out", ".", "directory the generated files are written to")
	flag.Parse()
	if err := run(*schemaDir, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

// run generates every file into outDir.
func run(schemaDir, outDir string) error {
	files, err := generate(schemaDir)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(files) {
		if err := os.WriteFile(filepath.Join(outDir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate returns the formatted generated files by name.
func generate(schemaDir string) (map[string][]byte, error) {
	in, err := loadInputs(schemaDir)
	if err != nil {
		return nil, err
	}
	m, err := build(in)
	if err != nil {
		return nil, err
	}
	types, codec, fast := emitTypes(m)
	raw := map[string]string{
		"types_gen.go":      types,
		"codec_gen.go":      codec,
		"fastdecode_gen.go": fast,
		"constants_gen.go":  emitConstants(m),
		"helpers_gen.go":    emitHelpers(m),
		"client_gen.go":     emitClientFile(m),
		"agent_gen.go":      emitAgentFile(m),
		// A test-only index of the generated types for golden and fuzz tests.
		"types_index_gen_test.go": emitIndex(m),
	}
	out := map[string][]byte{}
	for name, src := range raw {
		formatted, err := format.Source([]byte(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = formatted
	}
	return out, nil
}
