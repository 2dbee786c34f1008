#!/usr/bin/env bash
# Runs the inbound cursor/task and unknown-vendor-method scenarios of the
# conformance wire harness (conformance/wire, owned by the conformance suite)
# against the patched upstream tree and against sdk/, and requires identical
# transcripts (wire lines, handler calls, call outcomes) for each.
#
# Usage: conformance.sh [--all] PATCHED_UPSTREAM_DIR REPO_ROOT
#   --all  instead, run every harness scenario on both builds and list those
#          whose transcripts differ (informational: what sdk/ does that the
#          series does not carry upstream). Needs jq.
set -euo pipefail

all=0
if [[ "${1:-}" == --all ]]; then
  all=1
  shift
fi
patched=$(cd "${1:?patched upstream dir}" && pwd)
root=$(cd "${2:?repository root}" && pwd)
harness="$root/conformance/wire"

# The inbound scenarios issue 8 names: cursor/task and unknown vendor methods,
# with and without an ExtensionMethodHandler, on both sides.
scenarios=(
  client-inbound-cursor-task
  client-inbound-cursor-task-no-handler
  client-inbound-unknown-request-handler-refuses
  client-inbound-extension-request
  client-inbound-extension-notification
  client-inbound-unknown-notification
  client-inbound-extension-wrapped-error
  agent-extension-methods
  agent-extension-no-handler
)

if [[ ! -f "$harness/go.mod" ]]; then
  echo "conformance: $harness missing"
  exit 1
fi

export GOWORK=off GOFLAGS=-mod=mod
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-conform.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# go.mod of the harness replaces upstream with ../../sdk; the patched build
# uses a copy whose replace points at the patched tree.
cp "$harness/go.mod" "$tmp/patched.mod"
cp "$harness/go.sum" "$tmp/patched.sum" 2>/dev/null || : >"$tmp/patched.sum"
if ! (cd "$harness" &&
  go mod edit -modfile="$tmp/patched.mod" -replace="github.com/coder/acp-go-sdk=$patched" &&
  go build -modfile="$tmp/patched.mod" -o "$tmp/wire-patched" . &&
  go build -o "$tmp/wire-sdk" .) >"$tmp/build.log" 2>&1; then
  echo "conformance: cannot build the wire harness"
  sed 's/^/    /' "$tmp/build.log" | head -n 30
  exit 1
fi

if [[ $all -eq 1 ]]; then
  (cd "$harness" && "$tmp/wire-patched" -label same -out "$tmp/all.patched.json" &&
    "$tmp/wire-sdk" -label same -out "$tmp/all.sdk.json") >"$tmp/all.log" 2>&1 ||
    { sed 's/^/    /' "$tmp/all.log"; exit 1; }
  total=$(jq '.transcripts | length' "$tmp/all.sdk.json")
  jq -r --slurpfile s "$tmp/all.sdk.json" '
    ($s[0].transcripts | map({(.name): .}) | add) as $sdk
    | .transcripts[] | select(. != $sdk[.name]) | .name' "$tmp/all.patched.json" >"$tmp/differ"
  echo "conformance --all: $total scenarios, $(wc -l <"$tmp/differ") differ between patched upstream and sdk/:"
  sed 's/^/    /' "$tmp/differ"
  exit 0
fi

status=0
for s in "${scenarios[@]}"; do
  for b in patched sdk; do
    if ! (cd "$harness" && "$tmp/wire-$b" -label same -only "^$s\$" -out "$tmp/$s.$b.json") >"$tmp/$s.$b.log" 2>&1; then
      echo "conformance: $s  $b run: FAIL"; sed 's/^/    /' "$tmp/$s.$b.log" | head -n 20; status=1; continue 2
    fi
  done
  if ! grep -q "\"name\": *\"$s\"" "$tmp/$s.sdk.json"; then
    echo "conformance: $s  not found in the harness's scenarios: FAIL"; status=1; continue
  fi
  if cmp -s "$tmp/$s.patched.json" "$tmp/$s.sdk.json"; then
    echo "conformance: $s  patched upstream == sdk/: ok"
  else
    echo "conformance: $s  patched upstream == sdk/: DIFFERENT"
    diff -u --label patched-upstream --label sdk "$tmp/$s.patched.json" "$tmp/$s.sdk.json" | sed 's/^/    /' || true
    status=1
  fi
done
exit $status
