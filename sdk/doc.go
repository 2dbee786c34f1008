// Package acp is a Go SDK for the Agent Client Protocol (ACP), a drop-in
// replacement for github.com/coder/acp-go-sdk v0.13.5: the same exported API,
// the same wire behaviour for standard traffic, plus the additions listed in
// the repository's CHANGELOG.
//
// A client drives an agent process through a ClientSideConnection and
// implements Client (and optionally ClientExperimental and
// ExtensionMethodHandler); an agent serves a client through an
// AgentSideConnection and implements Agent (optionally AgentLoader,
// AgentExperimental, ExtensionMethodHandler). Both sides run on a
// newline-delimited JSON-RPC 2.0 Connection.
//
// The methods of the newer protocol (the TypeScript SDK 2.4.0's schema:
// session/delete, elicitation/*, session/archive, auth/status, …) are each
// optional through a small interface of their own (AgentDeleteSessionHandler,
// ClientCreateElicitationHandler, AgentUnstableArchiveSessionHandler, …),
// found by type assertion, so Agent and Client keep upstream's method sets.
//
// The protocol types, unions, method constants, dispatch tables and outbound
// methods (the *_gen.go files) are generated from the ACP JSON schema in
// schema/ by internal/cmd/generate.
//
// JSON decisions (see codec.go and fastdecode.go):
//   - objects encode with keys in alphabetical order, as upstream;
//   - a union decodes in one pass from its tag and encodes straight from the
//     variant struct; an unknown session-update kind is kept byte for byte
//     (SessionUpdate.Unknown) and re-encodes unchanged;
//   - numbers in dynamically typed fields (rawInput, rawOutput, _meta, …)
//     decode as float64, except integers beyond 2^53 and decimals with more
//     digits than float64 keeps, which decode as json.Number so that they
//     survive unchanged;
//   - patch fields of the subagent types are Nullable[T]: omitted, null and
//     a value are told apart.
package acp
