#!/usr/bin/env bash
# conformance/agents/run.sh (make agents): installs the pinned agents
# (npm install from the lock, skipped while node_modules matches package-lock.json), builds
# acpscope and the harness, and runs every agent in every scenario, inside
# a network namespace with only loopback (unshare -n) where that is allowed.
# Extra arguments go to the test binary (e.g. -test.run 'TestAgents/copilot').
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

stamp=node_modules/.acp-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # npm install, not npm ci: opencode-ai lists platform packages the
  # registry does not serve (darwin, windows, musl), which the lock cannot
  # name, and npm ci refuses a lock without them. npm install takes every
  # version from the lock; a lock it would change fails the run.
  npm install --no-audit --no-fund --loglevel=error
  if [ "$(sha256sum package-lock.json | cut -d' ' -f1)" != "$want" ]; then
    echo "agents: npm install changed package-lock.json: the lock does not pin every package" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd ../.. && go build -o "$bin/acpscope" ./cmd/acpscope && go test -c -o "$bin/agents.test" ./conformance/agents)

isolate=()
if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
  isolate=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh)
  echo "agents: in a network namespace (unshare -n): loopback only"
else
  echo "agents: unshare -n is not allowed here: running without network isolation"
fi

status=0
ACP_AGENTS=1 ACPSCOPE_BIN="$bin/acpscope" "${isolate[@]}" "$bin/agents.test" \
  -test.run '^TestAgents$' -test.count=1 -test.timeout=60m -test.v "$@" || status=$?
echo "agents: $(( $(date +%s) - start ))s in all"
exit $status
