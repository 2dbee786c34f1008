// Command agent is a small ACP agent speaking over its stdin and stdout.
//
// For each prompt it streams an echo of the prompt's text word by word,
// reads a file through the client (fs/read_text_file) as a visible tool
// call when the client offers that capability and the prompt names a file
// with "read <path>", and ends the turn. A session/cancel from the client
// ends the running prompt with stop reason "cancelled".
//
// Run it under the example client: go run ./example/client -agent <binary>.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// echoAgent implements acp.Agent.
type echoAgent struct {
	conn *acp.AgentSideConnection

	mu       sync.Mutex
	canRead  bool
	sessions int
}

func (a *echoAgent) Initialize(_ context.Context, req acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.canRead = req.ClientCapabilities.Fs.ReadTextFile
	a.mu.Unlock()
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "example-agent", Version: "1.0.0"},
		AuthMethods:     []acp.AuthMethod{},
	}, nil
}

func (a *echoAgent) NewSession(_ context.Context, _ acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions++
	return acp.NewSessionResponse{SessionId: acp.SessionId(fmt.Sprintf("sess-%d", a.sessions))}, nil
}

func (a *echoAgent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	var text []string
	for _, block := range req.Prompt {
		if block.Text != nil {
			text = append(text, block.Text.Text)
		}
	}
	prompt := strings.Join(text, " ")

	send := func(u acp.SessionUpdate) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: u})
	}
	for i, word := range strings.Fields("You said: " + prompt) {
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		if i > 0 {
			word = " " + word
		}
		if err := send(acp.UpdateAgentMessageText(word)); err != nil {
			return acp.PromptResponse{}, err
		}
	}

	a.mu.Lock()
	canRead := a.canRead
	a.mu.Unlock()
	if path, ok := strings.CutPrefix(prompt, "read "); ok && canRead {
		path = strings.TrimSpace(path)
		id := acp.ToolCallId("read-1")
		if err := send(acp.StartReadToolCall(id, "Read "+path, path)); err != nil {
			return acp.PromptResponse{}, err
		}
		file, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: req.SessionId, Path: path})
		status, summary := acp.ToolCallStatusCompleted, ""
		if err != nil {
			status, summary = acp.ToolCallStatusFailed, err.Error()
		} else {
			lines := strings.Count(file.Content, "\n")
			summary = fmt.Sprintf("%d lines", lines)
		}
		if err := send(acp.UpdateToolCall(id,
			acp.WithUpdateStatus(status),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(summary))}),
		)); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	if ctx.Err() != nil {
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// Cancel needs no work: the SDK cancels the running prompt's context.
func (a *echoAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *echoAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *echoAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

func (a *echoAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *echoAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}

func (a *echoAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *echoAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *echoAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

func main() {
	// Diagnostics go to stderr: stdout carries the protocol.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	agent := &echoAgent{}
	agent.conn = acp.NewAgentSideConnection(agent, os.Stdout, os.Stdin)
	agent.conn.SetLogger(logger)
	<-agent.conn.Done()
	// Let queued notifications (a final session/cancel) finish.
	_ = agent.conn.Wait(context.Background())
}
