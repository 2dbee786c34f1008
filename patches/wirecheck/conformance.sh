#!/usr/bin/env bash
# Runs the inbound cursor/task and unknown-vendor-method scenarios of the
# conformance wire harness (conformance/wire, owned by the conformance suite)
# against the patched upstream tree and against sdk/, and requires identical
# transcripts (wire lines, handler calls, call outcomes) for each.
#
# Usage: conformance.sh PATCHED_UPSTREAM_DIR REPO_ROOT
set -euo pipefail

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
