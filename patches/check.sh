#!/usr/bin/env bash
# Applies the patch series in this directory to upstream
# github.com/coder/acp-go-sdk v0.13.5 and runs upstream's whole test suite
# (which then includes the series' own tests) after each patch, with -race
# after the last one.
#
# Usage: patches/check.sh [--keep DIR] [--no-wire] [--race-each]
#   --keep DIR   leave the patched upstream tree (a git repo, one commit per
#                patch) in DIR, which must not exist yet or be empty.
#   --no-wire    skip the wire comparisons between the patched tree and sdk/.
#   --race-each  run the suite with -race after every patch (slower).
#
# Output: one line per patch, "NNNN-name.patch  applies: ok  tests: ok",
# then the wire comparisons (wirecheck/compare.sh: our two scenarios;
# wirecheck/conformance.sh: the conformance harness's inbound cursor/task and
# vendor-method scenarios), after an apidiff check of the patched API.
# Exits non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

module=github.com/coder/acp-go-sdk
version=v0.13.5
want_sum='h1:LI9jq5xon7xslaYlnoktvTVyDlE37yIk2daT7N9ASYk='

keep=""
wire=1
race_each=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --no-wire) wire=0; shift ;;
    --race-each) race_each=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [[ -n "$keep" && -e "$keep" && -n "$(ls -A "$keep" 2>/dev/null)" ]]; then
  echo "check.sh: --keep $keep exists and is not empty" >&2
  exit 2
fi

export GOWORK=off GOFLAGS=-mod=mod
work=$(mktemp -d "${TMPDIR:-/tmp}/acp-patches.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Fetch upstream through the Go toolchain (module cache or proxy) and verify
# the module hash before trusting its contents.
meta=$(cd "$work" && go mod download -json "$module@$version")
dir=$(printf '%s\n' "$meta" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
sum=$(printf '%s\n' "$meta" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z "$dir" || ! -d "$dir" ]]; then
  echo "check.sh: go mod download gave no Dir for $module@$version" >&2
  printf '%s\n' "$meta" >&2
  exit 1
fi
if [[ "$sum" != "$want_sum" ]]; then
  echo "check.sh: $module@$version has sum $sum, want $want_sum" >&2
  exit 1
fi

tree="$work/upstream"
cp -R "$dir" "$tree"
chmod -R u+w "$tree"
git_() { git -C "$tree" -c user.name=patches-check -c user.email=patches-check@localhost -c commit.gpgsign=false "$@"; }
git_ init -q
git_ add -A
git_ commit -q -m "upstream $module $version"

shopt -s nullglob
patches=("$here"/[0-9][0-9][0-9][0-9]-*.patch)
if [[ ${#patches[@]} -eq 0 ]]; then
  echo "check.sh: no patches in $here" >&2
  exit 1
fi

# Every patch gets the whole suite; the race detector runs after the last
# one (all the series' code), or after each with --race-each.
race_flags=()
if [[ $race_each -eq 1 ]]; then race_flags=(-race); fi
last_patch=${patches[${#patches[@]}-1]}

failed=0
log="$work/log"
for p in "${patches[@]}"; do
  name=$(basename "$p")
  if [[ $failed -ne 0 ]]; then
    printf '%s  applies: skipped  tests: skipped\n' "$name"
    continue
  fi
  if ! git_ apply --check "$p" >"$log" 2>&1 || ! git_ am -q --keep-cr "$p" >>"$log" 2>&1; then
    printf '%s  applies: FAIL  tests: skipped\n' "$name"
    sed 's/^/    /' "$log"
    git_ am --abort >/dev/null 2>&1 || true
    failed=1
    continue
  fi
  status=ok
  unformatted=$(cd "$tree" && gofmt -l .)
  if [[ -n "$unformatted" ]]; then
    status=FAIL
    echo "gofmt -l: $unformatted" >"$log"
  elif ! (cd "$tree" && go test "${race_flags[@]}" -count=1 ./... >"$log" 2>&1); then
    status=FAIL
  elif [[ "$p" == "$last_patch" && $race_each -eq 0 ]] &&
    ! (cd "$tree" && go test -race -count=1 ./... >"$log" 2>&1); then
    status=FAIL
  fi
  printf '%s  applies: ok  tests: %s\n' "$name" "$status"
  if [[ $status != ok ]]; then
    # Test failures, build errors and races; the connection's INFO logs are noise.
    if ! grep -E -- '--- FAIL|_test\.go:[0-9]+|^FAIL|^panic|DATA RACE|\.go:[0-9]+:[0-9]+: ' "$log" | head -n 40 | sed 's/^/    /'; then
      tail -n 40 "$log" | sed 's/^/    /'
    fi
    failed=1
  fi
done

if [[ $failed -eq 0 ]]; then
  count=$(cd "$tree" && go test -count=1 -list '.*' . | grep -c '^\(Test\|Example\|Fuzz\)' || true)
  echo "series: ${#patches[@]} patches on $module $version; $count tests, examples and fuzz targets in the patched package"
fi

# API: the series may only add to upstream's exported API, except for the
# variadic options on the three constructors (calls compile unchanged).
if [[ $failed -eq 0 ]]; then
  apidiff=$(command -v "$repo/.tools/apidiff" apidiff 2>/dev/null | head -n 1 || true)
  if [[ -z "$apidiff" ]]; then
    echo "api: skipped (apidiff not installed; run make tools)"
  else
    base="$work/base"
    cp -R "$dir" "$base"
    chmod -R u+w "$base"
    if (cd "$base" && "$apidiff" -w "$work/old.api" "$module") >"$log" 2>&1 &&
      (cd "$tree" && "$apidiff" -w "$work/new.api" "$module") >>"$log" 2>&1; then
      added=$("$apidiff" "$work/old.api" "$work/new.api" | grep -c ': added$' || true)
      unexpected=$("$apidiff" -incompatible "$work/old.api" "$work/new.api" | grep '^- ' | grep -vxF -f "$here/api-allowed.txt" || true)
      if [[ -z "$unexpected" ]]; then
        echo "api: $added additions; incompatible changes only the allowed variadic constructors (api-allowed.txt): ok"
      else
        echo "api: unexpected incompatible changes: FAIL"
        printf '%s\n' "$unexpected" | sed 's/^/    /'
        failed=1
      fi
    else
      echo "api: apidiff failed: FAIL"
      sed 's/^/    /' "$log"
      failed=1
    fi
  fi
fi

if [[ $failed -eq 0 && $wire -eq 1 ]]; then
  if ! "$here/wirecheck/compare.sh" "$tree" "$repo/sdk" "$dir"; then
    failed=1
  fi
  if ! "$here/wirecheck/conformance.sh" "$tree" "$repo"; then
    failed=1
  fi
fi

if [[ -n "$keep" ]]; then
  mkdir -p "$keep"
  cp -R "$tree/." "$keep/"
  echo "patched tree kept in $keep ($(git -C "$keep" rev-list --count HEAD) commits: upstream + applied patches)"
fi

exit $failed
