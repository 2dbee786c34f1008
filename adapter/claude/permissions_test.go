package claude_test

import (
	"context"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/claude"
)

// A child's pending permission request is answered cancelled exactly once
// when the client cancels that child, and stays with it.
func TestCancelAnswersChildRequestOnce(t *testing.T) {
	var p claude.PendingPermissions
	child := p.Ask("child")
	parent := p.Ask("parent")
	var wg sync.WaitGroup
	answers := make(chan int, 4)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); answers <- p.CancelSession("child") }()
	}
	wg.Wait()
	close(answers)
	total := 0
	for n := range answers {
		total += n
	}
	if total != 1 {
		t.Fatalf("child request answered %d times", total)
	}
	if resp := <-child.Answer; resp.Outcome.Cancelled == nil {
		t.Errorf("child answer %+v", resp)
	}
	if p.Pending("parent") != 1 {
		t.Error("cancelling the child touched the parent's request")
	}
	if p.Answer(child.ID, acp.RequestPermissionResponse{}) {
		t.Error("a second answer was accepted")
	}
	sel := acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: "allow"}}}
	if !p.Answer(parent.ID, sel) || (<-parent.Answer).Outcome.Selected == nil {
		t.Error("parent answer lost")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	late := p.Ask("child")
	if resp := p.Wait(ctx, late); resp.Outcome.Cancelled == nil || p.Pending("child") != 0 {
		t.Errorf("Wait after ctx end: %+v", resp)
	}
}
