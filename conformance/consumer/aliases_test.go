//lint:file-ignore SA1019 this file uses the v0.13.5 names on purpose: they must keep compiling and working.

package acpconsumer

// v0.13.5 code that names what the newer protocol made stable
// (session/delete, elicitation/*) compiles and works unchanged on our SDK:
// the Unstable… types, constructors, constants and methods are deprecated
// aliases and forwarders now.

import (
	"context"
	"io"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// legacyAgent implements the v0.13.5 AgentExperimental method for
// session/delete only.
type legacyAgent struct {
	acp.Agent
	deleted chan acp.SessionId
}

func (a *legacyAgent) UnstableDeleteSession(_ context.Context, p acp.UnstableDeleteSessionRequest) (acp.UnstableDeleteSessionResponse, error) {
	a.deleted <- p.SessionId
	return acp.UnstableDeleteSessionResponse{}, nil
}

func TestV0135NamesOfStabilisedMethods(t *testing.T) {
	// Types, constructors and constants of v0.13.5 still build.
	var req acp.UnstableCreateElicitationRequest = acp.NewUnstableCreateElicitationRequestForm(acp.UnstableElicitationSchema{Type: acp.UnstableElicitationSchemaTypeObject})
	if req.Form == nil || req.Form.Mode != "form" {
		t.Fatalf("NewUnstableCreateElicitationRequestForm = %+v", req)
	}
	var _ acp.UnstableCreateElicitationResponse = acp.NewUnstableCreateElicitationResponseDecline()
	var _ acp.UnstableCompleteElicitationNotification = acp.CompleteElicitationNotification{ElicitationId: "e"}
	var _ acp.UnstableCancelRequestNotification = acp.CancelRequestNotification{}

	// The outbound UnstableDeleteSession reaches an agent that implements
	// only the v0.13.5 method.
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	defer c2aW.Close()
	defer a2cW.Close()
	agent := &legacyAgent{deleted: make(chan acp.SessionId, 1)}
	_ = acp.NewAgentSideConnection(agent, a2cW, c2aR)
	client := acp.NewClientSideConnection(&Client{}, c2aW, a2cR)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := client.UnstableDeleteSession(ctx, acp.UnstableDeleteSessionRequest{SessionId: "s1"}); err != nil {
		t.Fatal(err)
	}
	if got := <-agent.deleted; got != "s1" {
		t.Fatalf("deleted %q", got)
	}
}
