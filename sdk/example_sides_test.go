package acp

import (
	"context"
	"fmt"
	"io"
)

// echoAgent answers every prompt with one message chunk.
type echoAgent struct {
	fuzzAgent
	conn *AgentSideConnection
}

func (a *echoAgent) Prompt(ctx context.Context, p PromptRequest) (PromptResponse, error) {
	err := a.conn.SessionUpdate(ctx, SessionNotification{
		SessionId: p.SessionId,
		Update:    SessionUpdate{AgentMessageChunk: &SessionUpdateAgentMessageChunk{Content: ContentBlock{Text: &ContentBlockText{Text: "echo: " + p.Prompt[0].Text.Text}}}},
	})
	return PromptResponse{StopReason: StopReasonEndTurn}, err
}

// printingClient prints the agent's messages.
type printingClient struct{ *testClient }

func (c printingClient) SessionUpdate(ctx context.Context, n SessionNotification) error {
	if chunk := n.Update.AgentMessageChunk; chunk != nil {
		fmt.Println("agent says:", chunk.Content.Text.Text)
	}
	return nil
}

// A client and an agent complete a turn over in-memory pipes: the update
// sent during the prompt reaches the client before Prompt returns.
func ExampleNewClientSideConnection() {
	clientReads, agentWrites := io.Pipe()
	agentReads, clientWrites := io.Pipe()

	agent := &echoAgent{}
	agent.conn = NewAgentSideConnection(agent, agentWrites, agentReads)
	client := NewClientSideConnection(printingClient{newTestClient()}, clientWrites, clientReads)

	ctx := context.Background()
	if _, err := client.Initialize(ctx, InitializeRequest{ProtocolVersion: ProtocolVersionNumber}); err != nil {
		fmt.Println(err)
		return
	}
	sess, err := client.NewSession(ctx, NewSessionRequest{Cwd: "/", McpServers: []McpServer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Prompt(ctx, PromptRequest{SessionId: sess.SessionId, Prompt: []ContentBlock{{Text: &ContentBlockText{Text: "hello"}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop reason:", resp.StopReason)

	clientWrites.Close()
	agentWrites.Close()
	<-client.Done()
	<-agent.conn.Done()
	// Output:
	// agent says: echo: hello
	// stop reason: end_turn
}
