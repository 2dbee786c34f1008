#!/usr/bin/env bash
# Runs the benchmark harness of this directory against upstream
# github.com/coder/acp-go-sdk v0.13.5 (upstream.mod) and against this
# repository's sdk/ (fork.mod), interleaving the runs so machine load hits
# both alike, then prints benchstat's side-by-side table.
#
#   COUNT      runs per build (default 6)
#   BENCHTIME  -benchtime per benchmark (default 1s)
#   BENCH      benchmark regexp (default .)
#   BENCHSTAT  benchstat binary (default <repo>/.tools/benchstat, then PATH)
#   BASE_SDK   an SDK directory to compare the fork against instead of
#              upstream (say a worktree of an earlier commit's sdk/)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
count="${COUNT:-6}"
benchtime="${BENCHTIME:-1s}"
bench="${BENCH:-.}"
benchstat="${BENCHSTAT:-$root/.tools/benchstat}"
if [[ ! -x "$benchstat" ]]; then
  benchstat="$(command -v benchstat || true)"
fi

export GOWORK=off
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

cd "$here"
base_mod=upstream.mod
if [[ -n "${BASE_SDK:-}" ]]; then
  # The same harness against another SDK directory, named "upstream" in
  # benchstat's table.
  base_mod="$out/base.mod"
  sed "s#=> ../../sdk#=> $(cd "$BASE_SDK" && pwd)#" fork.mod >"$base_mod"
  cp fork.sum "$out/base.sum"
fi
for build in upstream fork; do
  mod="$build.mod"
  [[ $build == upstream ]] && mod="$base_mod"
  echo "== building the harness against $build ($mod)" >&2
  go test -c -modfile="$mod" -o "$out/$build.test" .
done

for ((i = 1; i <= count; i++)); do
  for build in upstream fork; do
    echo "== run $i/$count: $build" >&2
    "$out/$build.test" -test.run '^$' -test.bench "$bench" -test.benchmem \
      -test.benchtime "$benchtime" -test.count 1 >>"$out/$build"
  done
done

cd "$out"
if [[ -n "$benchstat" ]]; then
  "$benchstat" upstream fork
else
  echo "benchstat not found (run 'make tools'); raw results:" >&2
  cat upstream fork
fi
