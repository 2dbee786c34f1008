#!/usr/bin/env bash
# Runs every Fuzz* target in every module for $FUZZTIME each.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-30s}
count=0
for mod in sdk .; do
  (cd "$mod" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...) |
  while read -r pkg dir; do
    targets=$(cd "$mod" && go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
    for t in $targets; do
      echo "== fuzz $pkg $t ($FUZZTIME)"
      (cd "$mod" && go test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg")
    done
  done
done
