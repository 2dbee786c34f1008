#!/usr/bin/env bash
# Builds wirecheck against two SDK trees and compares, byte for byte, what
# each writes in the cursor/task and unknown-vendor-method scenarios.
#
# Usage: compare.sh PATCHED_UPSTREAM_DIR SDK_DIR [PLAIN_UPSTREAM_DIR]
# Prints one line per scenario; exits non-zero on any difference or failure.
# With PLAIN_UPSTREAM_DIR it also checks that unpatched upstream answers the
# cursor-task scenario differently, i.e. that the scenario can fail at all.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
a=$(cd "${1:?patched upstream dir}" && pwd)
b=$(cd "${2:?sdk dir}" && pwd)
plain=${3:-}
scenarios=(cursor-task unknown-vendor-methods)

export GOWORK=off GOFLAGS=-mod=mod
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-wirecheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One modfile per tree: the same program, only the replace target differs.
build() { # label dir
  local mod="$tmp/$1.mod"
  cp "$here/go.mod" "$mod"
  : >"$tmp/$1.sum"
  (cd "$here" && go mod edit -modfile="$mod" -replace="github.com/coder/acp-go-sdk=$2" &&
    go build -modfile="$mod" -o "$tmp/$1" .) >"$tmp/$1.build.log" 2>&1
}

status=0
if ! build patched "$a"; then
  echo "wire: cannot build wirecheck against the patched upstream tree"; sed 's/^/    /' "$tmp/patched.build.log"; exit 1
fi
if ! build sdk "$b"; then
  echo "wire: cannot build wirecheck against $b"; sed 's/^/    /' "$tmp/sdk.build.log" | head -n 30; exit 1
fi
for s in "${scenarios[@]}"; do
  if ! "$tmp/patched" "$s" >"$tmp/$s.patched" 2>"$tmp/$s.patched.err"; then
    echo "wire: $s  patched upstream: FAIL"; sed 's/^/    /' "$tmp/$s.patched.err"; status=1; continue
  fi
  if ! "$tmp/sdk" "$s" >"$tmp/$s.sdk" 2>"$tmp/$s.sdk.err"; then
    echo "wire: $s  sdk/: FAIL"; sed 's/^/    /' "$tmp/$s.sdk.err"; status=1; continue
  fi
  if cmp -s "$tmp/$s.patched" "$tmp/$s.sdk"; then
    echo "wire: $s  patched upstream == sdk/: ok ($(grep -c '^< ' "$tmp/$s.sdk") replies)"
  else
    echo "wire: $s  patched upstream == sdk/: DIFFERENT"
    diff -u --label patched-upstream --label sdk "$tmp/$s.patched" "$tmp/$s.sdk" | sed 's/^/    /' || true
    status=1
  fi
done

if [[ -n "$plain" ]]; then
  if ! build plain "$plain"; then
    echo "wire: cannot build wirecheck against plain upstream"; sed 's/^/    /' "$tmp/plain.build.log"; exit 1
  fi
  # Plain upstream answers cursor/task -32601; the program still exits 0.
  "$tmp/plain" cursor-task >"$tmp/plain.out" 2>&1 || true
  if cmp -s "$tmp/plain.out" "$tmp/cursor-task.patched"; then
    echo "wire: cursor-task  plain upstream differs (scenario is sensitive): FAIL (same bytes)"
    status=1
  else
    echo "wire: cursor-task  plain upstream differs (scenario is sensitive): ok"
  fi
fi
exit $status
