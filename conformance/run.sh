#!/usr/bin/env bash
# conformance/run.sh: the whole conformance suite (make conformance).
#
#   1. wire      the harness in conformance/wire built against upstream
#                github.com/coder/acp-go-sdk v0.13.5 and against sdk/, each
#                run twice; transcripts compared byte for byte, differences
#                checked against conformance/wire/allowlist.json
#   2. consumer  conformance/consumer, a module that replaces upstream with
#                sdk/ and completes a cursor/task round trip (issue 2), plus a
#                consumer's patterns in testing/synctest bubbles (issue 22)
#   3. peers     sourcegraph/jsonrpc2 peers, then the official TypeScript
#                SDK's agent and client (npm ci in conformance/ts if needed)
#   4. identity  capture replays through the client pipeline with and
#                without the Cursor adapter; non-Cursor output byte identical
#
# Prints a table and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GOWORK=off

declare -a ROWS=()
FAILED=0

row() { ROWS+=("$(printf '%-30s %5s %9s %8s %9s' "$1" "$2" "$3" "$4" "$5")"); }
section() { printf '\n==== %s\n' "$*"; }

# count_go_tests LOG: prints "run passed failed" from `go test -v` output
# (top-level tests only).
count_go_tests() {
  local pass fail
  pass=$(grep -c '^--- PASS' "$1" || true)
  fail=$(grep -c '^--- FAIL' "$1" || true)
  if grep -qE '^(FAIL|panic:|# )' "$1" && [ "$fail" -eq 0 ]; then fail=1; fi
  echo "$((pass + fail)) $pass $fail"
}

go_suite() { # name dir log go-test-args...
  local name=$1 dir=$2 log=$3; shift 3
  (cd "$dir" && go test -race -count=1 -v "$@") >"$log" 2>&1
  local rc=$?
  read -r run pass fail < <(count_go_tests "$log")
  if [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  grep -E '^(=== RUN|--- (PASS|FAIL)|FAIL|ok |PASS)' "$log" | grep -v '^=== RUN' | sed 's/^/  /'
  if [ "$fail" -ne 0 ]; then
    FAILED=1
    echo "  ---- $name failed; log:"; sed 's/^/  | /' "$log" | tail -n 80
  fi
  row "$name" "$run" "$pass" "-" "$fail"
}

# ---------------------------------------------------------------- 1. wire
section "wire harness self-tests (scenario files, comparer, allowlist)"
go_suite "wire harness self-tests" conformance/wire "$WORK/wire-selftest.log" -modfile=upstream.mod ./...

section "wire conformance (upstream v0.13.5 vs sdk/)"
WIRE_OK=1
(cd conformance/wire &&
  go build -modfile=upstream.mod -o "$WORK/wire-upstream" . &&
  go build -modfile=upstream.mod -o "$WORK/wirecompare" ./cmd/wirecompare) >"$WORK/wire-build.log" 2>&1 ||
  { echo "  upstream build failed:"; sed 's/^/  | /' "$WORK/wire-build.log"; WIRE_OK=0; }
(cd conformance/wire && go build -modfile=fork.mod -o "$WORK/wire-fork" .) >"$WORK/wire-fork-build.log" 2>&1 ||
  { echo "  sdk/ build failed:"; sed 's/^/  | /' "$WORK/wire-fork-build.log"; WIRE_OK=0; }
if [ $WIRE_OK -eq 1 ]; then
  (cd conformance/wire &&
    "$WORK/wire-upstream" -label upstream -out "$WORK/upstream-1.json" &&
    "$WORK/wire-fork" -label fork -out "$WORK/fork-1.json" &&
    "$WORK/wire-upstream" -label upstream -out "$WORK/upstream-2.json" &&
    "$WORK/wire-fork" -label fork -out "$WORK/fork-2.json" &&
    "$WORK/wirecompare" -upstream "$WORK/upstream-1.json" -fork "$WORK/fork-1.json" \
      -upstream-again "$WORK/upstream-2.json" -fork-again "$WORK/fork-2.json" \
      -allow allowlist.json -root "$ROOT") | tee "$WORK/wire.log" | sed 's/^/  /'
  summary=$(grep '^SUMMARY' "$WORK/wire.log" || true)
  if [ -z "$summary" ]; then
    WIRE_OK=0
  else
    eval "${summary#SUMMARY }"
    # shellcheck disable=SC2154 # set by eval
    row "wire scenarios" "$scenarios" "$identical" "$allowed" "$failures"
    [ "$failures" -eq 0 ] || FAILED=1
  fi
fi
if [ $WIRE_OK -eq 0 ]; then
  FAILED=1
  row "wire scenarios" "?" "?" "?" "build"
fi

# The tests the allowlist names must exist (wirecompare checks) and pass.
section "allowlist pinning tests (go test in sdk/)"
pins=$(grep -o '"sdk/[^"]*_test\.go:Test[A-Za-z0-9_]*"' conformance/wire/allowlist.json | tr -d '"' | sort -u)
pin_dirs=$(for p in $pins; do dirname "${p%%:*}"; done | sort -u)
for d in $pin_dirs; do
  names=$(for p in $pins; do [ "$(dirname "${p%%:*}")" = "$d" ] && echo "${p##*:}"; done | sort -u | paste -sd'|')
  go_suite "pinning tests ($d)" "$d" "$WORK/pins-${d//\//_}.log" -run "^($names)\$" .
done

# ------------------------------------------------------------ 2. consumer
section "consumer module (github.com/coder/acp-go-sdk replaced by sdk/)"
go_suite "consumer module (cursor/task, synctest)" conformance/consumer "$WORK/consumer.log" ./...

# --------------------------------------------------------------- 3. peers
section "independent peers: sourcegraph/jsonrpc2"
go_suite "sourcegraph/jsonrpc2 peers" . "$WORK/sourcegraph.log" -run '^TestSourcegraph' ./conformance/peers/

section "independent peers: @agentclientprotocol/sdk 2.4.0 (TypeScript)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "  node/npm not found"
  FAILED=1
  row "TypeScript SDK peers" "?" "?" "-" "no node"
else
  if [ ! -d conformance/ts/node_modules/@agentclientprotocol/sdk ]; then
    (cd conformance/ts && npm ci --no-audit --no-fund) 2>&1 | sed 's/^/  npm: /'
  fi
  go_suite "TypeScript SDK peers" . "$WORK/ts.log" -tags conformance -run '^TestTS' ./conformance/peers/
fi

# ------------------------------------------------------------ 4. identity
section "adapter identity (Cursor adapter installed vs not)"
# This suite's captures plus every capture the adapter packages test with.
CAPTURES=conformance/testdata
for d in adapter/testdata adapter/claude/testdata adapter/cursor/testdata; do
  if compgen -G "$d/*.jsonl" >/dev/null; then CAPTURES="$CAPTURES,$d"; fi
done
if go build -tags withcursor -o "$WORK/identity-with" ./conformance/identity >"$WORK/id-build.log" 2>&1 &&
  go build -o "$WORK/identity-without" ./conformance/identity >>"$WORK/id-build.log" 2>&1; then
  echo "  captures from: ${CAPTURES//,/ }"
  for run in 1 2; do
    "$WORK/identity-with" -testdata "$CAPTURES" -out "$WORK/with-$run.json"
    "$WORK/identity-without" -testdata "$CAPTURES" -out "$WORK/without-$run.json"
  done
  "$WORK/identity-with" -compare "$WORK/with-1.json" "$WORK/without-1.json" | tee "$WORK/identity.log" | sed 's/^/  /'
  summary=$(grep '^SUMMARY' "$WORK/identity.log" || true)
  nondet=0
  for b in with without; do
    "$WORK/identity-with" -same "$WORK/$b-1.json" "$WORK/$b-2.json" | sed 's/^/  /' || nondet=$((nondet + 1))
  done
  if [ -n "$summary" ]; then
    eval "${summary#SUMMARY }"
    # shellcheck disable=SC2154 # set by eval
    row "adapter identity captures" "$captures" "$identical" "cursor:$cursor" "$((failures + nondet))"
    [ "$((failures + nondet))" -eq 0 ] || FAILED=1
  else
    FAILED=1
    row "adapter identity captures" "?" "?" "-" "error"
  fi
else
  sed 's/^/  | /' "$WORK/id-build.log"
  FAILED=1
  row "adapter identity captures" "?" "?" "-" "build"
fi

# --------------------------------------------------------------- summary
echo
echo "CONFORMANCE SUMMARY"
printf '%-30s %5s %9s %8s %9s\n' "suite" "run" "identical" "allowed" "failures"
printf '%-30s %5s %9s %8s %9s\n' "" "" "/passed" "" ""
for r in "${ROWS[@]}"; do echo "$r"; done
if [ -f "$WORK/wire.log" ]; then
  echo
  echo "allowed wire differences (conformance/wire/allowlist.json):"
  sed -n '/allowed differences/,/failures/p' "$WORK/wire.log" | sed '1d;$d'
fi
if [ $FAILED -ne 0 ]; then
  echo
  echo "conformance: FAILED"
  exit 1
fi
echo
echo "conformance: ok"
