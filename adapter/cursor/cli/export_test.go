package cli

import "testing"

// FakeRunner exposes the fake CLI to the external test package: a runner
// whose turns play script.
func FakeRunner(t *testing.T, script ...string) *Runner { return newFixture(t, script...).runner }

// Canned lines for external tests.
var (
	LineInit      = lineInit
	LineReadStart = lineReadStart
	LineReadDone  = lineReadDone
	LineAssistant = lineAssistant
	LineResultOK  = lineResultOK
	LineShellRej  = lineShellRej
)
