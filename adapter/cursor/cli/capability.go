package cli

import (
	"context"
	"fmt"
)

// ContractVersion is the Cursor backend contract this package implements.
const ContractVersion = 2

// BackendCapability is capabilities.cursor_backend of GET /api/health. It
// describes this server build, not the host: Available is true whether or
// not a CLI is installed.
type BackendCapability struct {
	Available                       bool   `json:"available"`
	Version                         int    `json:"version"`
	InstructionChannel              string `json:"instruction_channel"`
	TrustedSystemInstructionChannel bool   `json:"trusted_system_instruction_channel"`
}

// HealthCapability returns the health capability of contract v2:
// available, version 2, instructions in a prompt envelope, no trusted system
// channel.
func HealthCapability() BackendCapability {
	return BackendCapability{
		Available:                       true,
		Version:                         ContractVersion,
		InstructionChannel:              "prompt_envelope",
		TrustedSystemInstructionChannel: false,
	}
}

// Action is something a user can do to make Cursor available. Command names
// the executable, never its path.
type Action struct {
	Kind    string `json:"kind"` // "login", "install_or_update"
	Command string `json:"command,omitempty"`
	Message string `json:"message"`
}

// CatalogEntry is backends.cursor of GET /api/runtime/catalog: available
// only when a compatible CLI is found and authenticated. It holds no path
// and no account details.
type CatalogEntry struct {
	Available  bool              `json:"available"`
	Executable string            `json:"executable,omitempty"`
	Version    string            `json:"version,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Actions    []Action          `json:"actions,omitempty"`
	Candidates []CandidateReport `json:"candidates,omitempty"`
}

// Catalog discovers the CLI and checks its authentication. It returns the
// public entry and, when available, the admitted executable to run turns
// with.
func (d *Discoverer) Catalog(ctx context.Context) (CatalogEntry, *Executable) {
	disc := d.Discover(ctx)
	entry := CatalogEntry{Candidates: disc.Candidates}
	exe := disc.Selected
	if exe == nil {
		entry.Reason = "no compatible Cursor CLI found"
		entry.Actions = []Action{{
			Kind:    "install_or_update",
			Message: "Install or update the Cursor CLI (cursor-agent); this server never installs it.",
		}}
		return entry, nil
	}
	entry.Executable, entry.Version = exe.Name, exe.Version
	switch exe.Status(ctx) {
	case AuthLoggedIn:
		entry.Available = true
		return entry, exe
	case AuthNotLoggedIn:
		entry.Reason = "the Cursor CLI is not logged in"
	default:
		entry.Reason = "the Cursor CLI's login status is unknown"
	}
	entry.Actions = []Action{{
		Kind:    "login",
		Command: exe.Name + " login",
		Message: fmt.Sprintf("Run `%s login` on the server host.", exe.Name),
	}}
	return entry, nil
}
