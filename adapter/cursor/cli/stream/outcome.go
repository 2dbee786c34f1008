package stream

// OutcomeClass is how the runner treats a completed tool call's outcome key
// (docs/cursor-cli.md#outcome-keys).
type OutcomeClass int

// Outcome classes.
const (
	OutcomeUnknown           OutcomeClass = iota // never returned by Parse: unknown keys are schema errors
	OutcomeSuccess                               // the tool succeeded
	OutcomeNeutral                               // closed with a neutral status (approved, async, stillRunning)
	OutcomeNeedsConfirmation                     // the CLI waits for an approval nobody can give: fail closed
	OutcomeDeclined                              // policy decline ("rejected"); the turn continues
	OutcomeFailure                               // the tool failed; the turn continues
)

var outcomeClassNames = [...]string{
	OutcomeUnknown:           "unknown",
	OutcomeSuccess:           "success",
	OutcomeNeutral:           "neutral",
	OutcomeNeedsConfirmation: "needs_confirmation",
	OutcomeDeclined:          "declined",
	OutcomeFailure:           "failure",
}

// String names the class.
func (c OutcomeClass) String() string {
	if c >= 0 && int(c) < len(outcomeClassNames) {
		return outcomeClassNames[c]
	}
	return "unknown"
}

// outcomeKeys is the data-driven allowlist of result keys. Add a key here,
// with a fixture in the tests, when a new CLI build shows one.
var outcomeKeys = map[string]OutcomeClass{
	"success":        OutcomeSuccess,
	"complete":       OutcomeSuccess,
	"registered":     OutcomeSuccess,
	"startSuccess":   OutcomeSuccess,
	"saveSuccess":    OutcomeSuccess,
	"discardSuccess": OutcomeSuccess,

	"approved":     OutcomeNeutral,
	"async":        OutcomeNeutral,
	"stillRunning": OutcomeNeutral,

	"needsConfirmation": OutcomeNeedsConfirmation,

	"rejected": OutcomeDeclined,

	"failure":               OutcomeFailure,
	"error":                 OutcomeFailure,
	"timeout":               OutcomeFailure,
	"spawnError":            OutcomeFailure,
	"permissionDenied":      OutcomeFailure,
	"readPermissionDenied":  OutcomeFailure,
	"writePermissionDenied": OutcomeFailure,
	"fileNotFound":          OutcomeFailure,
	"invalidFile":           OutcomeFailure,
	"notFile":               OutcomeFailure,
	"fileBusy":              OutcomeFailure,
	"noSpace":               OutcomeFailure,
	"sandboxUnsupported":    OutcomeFailure,
	"notFound":              OutcomeFailure,
	"serverNotFound":        OutcomeFailure,
	"toolNotFound":          OutcomeFailure,
}

// ClassifyOutcome returns the class of a tool result key, or OutcomeUnknown.
func ClassifyOutcome(key string) OutcomeClass { return outcomeKeys[key] }
