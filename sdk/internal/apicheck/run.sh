#!/usr/bin/env bash
# apicheck: compare the exported API of upstream github.com/coder/acp-go-sdk
# v0.13.5 with sdk/ using apidiff, print the report, and fail on any
# incompatible change. Both packages declare the same import path, so each
# one's export data is written from inside its own module directory
# (`apidiff -w`), then the two files are compared.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
SDK="$ROOT/sdk"
APIDIFF="${APIDIFF:-$ROOT/.tools/apidiff}"
if [[ ! -x "$APIDIFF" ]]; then
  APIDIFF="$(command -v apidiff || true)"
fi
if [[ -z "$APIDIFF" ]]; then
  echo "apicheck: apidiff not found; run 'make tools'" >&2
  exit 2
fi

WORK="$(mktemp -d)"
trap 'chmod -R u+w "$WORK" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# Locate upstream in the module cache (downloads it when missing).
UPSTREAM_DIR="$(cd "$WORK" && GOFLAGS=-mod=mod GOWORK=off go mod download -json github.com/coder/acp-go-sdk@v0.13.5 \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "$UPSTREAM_DIR" || ! -d "$UPSTREAM_DIR" ]]; then
  echo "apicheck: could not locate github.com/coder/acp-go-sdk@v0.13.5 in the module cache" >&2
  exit 2
fi

# The module cache is read-only; copy it so go/packages may write nothing there.
mkdir -p "$WORK/old"
cp -R "$UPSTREAM_DIR"/. "$WORK/old"
chmod -R u+w "$WORK/old"

(cd "$WORK/old" && GOWORK=off GOFLAGS=-mod=mod "$APIDIFF" -w "$WORK/old.api" github.com/coder/acp-go-sdk)
(cd "$SDK" && GOWORK=off "$APIDIFF" -w "$WORK/new.api" github.com/coder/acp-go-sdk)

echo "== apidiff github.com/coder/acp-go-sdk: upstream v0.13.5 -> sdk/"
"$APIDIFF" "$WORK/old.api" "$WORK/new.api" | tee "$WORK/report.txt"

# Incompatible lines, minus the exact lines allowed.txt accepts (the variadic
# ConnectionOption on the three constructors, which calls do not notice).
ALLOWED="$(dirname "${BASH_SOURCE[0]}")/allowed.txt"
"$APIDIFF" -incompatible "$WORK/old.api" "$WORK/new.api" | grep -E '^- ' > "$WORK/incompatible.txt" || true
grep -E '^- ' "$ALLOWED" > "$WORK/allowed.txt" || true
UNEXPECTED="$(grep -vxF -f "$WORK/allowed.txt" "$WORK/incompatible.txt" || true)"
ACCEPTED="$(grep -xF -f "$WORK/allowed.txt" "$WORK/incompatible.txt" || true)"
echo
if [[ -n "$ACCEPTED" ]]; then
  echo "apicheck: accepted (source-compatible, required; see sdk/internal/apicheck/allowed.txt):"
  echo "$ACCEPTED"
fi
if [[ -n "$UNEXPECTED" ]]; then
  echo "apicheck: FAIL: incompatible changes against upstream v0.13.5:" >&2
  echo "$UNEXPECTED" >&2
  exit 1
fi
echo "apicheck: OK: no incompatible change against upstream v0.13.5 beyond the accepted list"
