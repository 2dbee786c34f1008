package adapter

// GitHub Copilot (copilot --acp --stdio) has no code of its own yet: the
// common rules R1–R4 apply as written.

func init() { registerGeneric(DialectCopilot) }
