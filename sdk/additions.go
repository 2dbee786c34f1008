package acp

// Names consumers of the kdlbs fork already use, kept source-compatible.

// TerminalId is a terminal's identifier (the fields stay plain strings).
type TerminalId = string

// AuthMethodId is an authentication method's identifier.
type AuthMethodId = string

// MessageId identifies a message within a session's transcript.
type MessageId = string

// LegacyAgentMethodSessionSetModel is the legacy "session/set_model" method,
// which agents offered before session config options. Only the client sends
// it (ClientSideConnection.UnstableSetSessionModel); the SDK does not dispatch
// it to agents.
const LegacyAgentMethodSessionSetModel = "session/set_model"
