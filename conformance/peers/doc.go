// Package peers holds the independent-peer conformance tests: our SDK,
// and the client stack built on it, talking to JSON-RPC and ACP
// implementations nobody here wrote.
//
//   - sourcegraph_test.go: github.com/sourcegraph/jsonrpc2 playing a
//     Cursor-like agent against our Go client (cursor/task and other
//     vendor requests, replies asserted on the peer's side), and playing a
//     client that drives the conformance peer agent through a turn.
//   - ts_test.go (build tag "conformance", needs Node and conformance/ts
//     installed): the official TypeScript SDK @agentclientprotocol/sdk
//     2.4.0 as an agent our Go client drives through a whole turn, and as
//     a client driving our Go agent.
package peers
