// Package agents is the published-agent harness: its tests run each ACP
// agent from the npm registry, pinned in package.json and package-lock.json,
// against the scripted model server of package modelserver, through
// `acpscope run --record --json`, and check the subagent cards and the
// stored rows. They run only with ACP_AGENTS=1 (`make agents` installs the
// agents and sets it); with ACP_AGENTS_UPDATE=1 they also rewrite the
// recorded captures and golden cards under testdata/, which
// cmd/acpscope's tests replay offline in `make test`.
package agents
