// Command client starts an ACP agent as a subprocess and completes one turn
// with it over the agent's stdin and stdout: initialize, session/new,
// session/prompt. It prints the agent's streamed reply and tool calls, and
// serves fs/read_text_file for files under the working directory.
//
//	go build -o /tmp/agent ./example/agent
//	go run ./example/client -agent /tmp/agent -prompt "read go.mod"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// printingClient implements acp.Client, writing what the agent reports.
type printingClient struct {
	out  io.Writer
	root string
	mu   sync.Mutex
}

func (c *printingClient) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format, args...)
}

func (c *printingClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		c.printf("%s", u.AgentMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		c.printf("\n[tool %s] %s (%s)\n", u.ToolCall.ToolCallId, u.ToolCall.Title, u.ToolCall.Status)
	case u.ToolCallUpdate != nil:
		status := ""
		if u.ToolCallUpdate.Status != nil {
			status = string(*u.ToolCallUpdate.Status)
		}
		detail := ""
		for _, content := range u.ToolCallUpdate.Content {
			if content.Content != nil && content.Content.Content.Text != nil {
				detail = ": " + content.Content.Content.Text.Text
			}
		}
		c.printf("[tool %s] %s%s\n", u.ToolCallUpdate.ToolCallId, status, detail)
	}
	return nil
}

// ReadTextFile serves files under the client's root directory only.
func (c *printingClient) ReadTextFile(_ context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	path := req.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.root, path)
	}
	rel, err := filepath.Rel(c.root, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "path outside the working directory"})
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	return acp.ReadTextFileResponse{Content: string(data)}, nil
}

func (c *printingClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

// RequestPermission declines: this client grants nothing.
func (c *printingClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *printingClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *printingClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *printingClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *printingClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *printingClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func main() {
	agentPath := flag.String("agent", "", "path of the agent program to start (required)")
	prompt := flag.String("prompt", "hello agent", "prompt text to send")
	timeout := flag.Duration("timeout", time.Minute, "give up on the turn after this long")
	flag.Parse()
	if *agentPath == "" {
		fmt.Fprintln(os.Stderr, "usage: client -agent <path> [-prompt text]")
		os.Exit(2)
	}
	if err := run(*agentPath, *prompt, *timeout, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(agentPath, prompt string, timeout time.Duration, out io.Writer) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	cmd := exec.Command(agentPath)
	cmd.Stderr = os.Stderr
	toAgent, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fromAgent, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}

	client := &printingClient{out: out, root: root}
	conn := acp.NewClientSideConnection(client, toAgent, fromAgent)
	conn.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	turnErr := turn(ctx, conn, client, root, prompt)

	// Closing our end of the pipes tells the agent to exit.
	_ = conn.Close()
	waitErr := cmd.Wait()
	if turnErr != nil {
		return turnErr
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		return fmt.Errorf("agent exited: %w", waitErr)
	}
	return nil
}

func turn(ctx context.Context, conn *acp.ClientSideConnection, client *printingClient, root, prompt string) error {
	init, err := conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true}},
		ClientInfo:         &acp.Implementation{Name: "example-client", Version: "1.0.0"},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	name := "agent"
	if init.AgentInfo != nil {
		name = init.AgentInfo.Name
	}
	client.printf("connected to %s (protocol %d)\n", name, init.ProtocolVersion)

	session, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: root, McpServers: []acp.McpServer{}})
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	resp, err := conn.Prompt(ctx, acp.PromptRequest{
		SessionId: session.SessionId,
		Prompt:    []acp.ContentBlock{acp.TextBlock(prompt)},
	})
	if err != nil {
		return fmt.Errorf("session/prompt: %w", err)
	}
	// Prompt returns after every update sent before its response was
	// handled, so the reply above is complete.
	client.printf("\nstop reason: %s\n", resp.StopReason)
	return nil
}
