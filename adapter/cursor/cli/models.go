package cli

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// Model is one entry of the CLI's model list.
type Model struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Current and Default reflect the "(current, default)" or "(default)"
	// marker; both forms occur on different accounts.
	Current bool `json:"current,omitempty"`
	Default bool `json:"default,omitempty"`
	// Router is true for "auto": Cursor's router, not a concrete model.
	Router bool `json:"router,omitempty"`
}

// Bounds applied to auxiliary command output (help, status, about, models).
const (
	MaxAuxOutputBytes = 256 << 10
	MaxAuxOutputLines = 2000
)

var ansiPattern = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// StripANSI removes terminal escape sequences (CSI, OSC and two-byte forms).
func StripANSI(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return s
	}
	return ansiPattern.ReplaceAllString(s, "")
}

var modelMarker = regexp.MustCompile(`\s*\(((?:current|default)(?:\s*,\s*(?:current|default))*)\)\s*$`)

// ParseModelList parses the plain-text output of `--list-models` (or the
// `models` subcommand): ANSI codes stripped; the "Available models" header,
// blank lines and "Tip:" lines skipped; every other line read as
// "<id> - <label>" with an optional trailing "(current, default)" or
// "(default)" marker. Lines of another shape are skipped, duplicates keep
// their first occurrence, and at most MaxAuxOutputBytes / MaxAuxOutputLines
// are read. It never fails: unusable input yields an empty list.
func ParseModelList(out []byte) []Model {
	if len(out) > MaxAuxOutputBytes {
		out = out[:MaxAuxOutputBytes]
	}
	var models []Model
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), MaxAuxOutputBytes)
	for n := 0; sc.Scan() && n < MaxAuxOutputLines; n++ {
		line := strings.TrimSpace(StripANSI(sc.Text()))
		if line == "" || strings.HasPrefix(line, "Tip:") || strings.EqualFold(line, "Available models") ||
			strings.HasPrefix(strings.ToLower(line), "available models") {
			continue
		}
		id, label, ok := strings.Cut(line, " - ")
		id, label = strings.TrimSpace(id), strings.TrimSpace(label)
		if !ok || !validModelID(id) || seen[id] {
			continue
		}
		m := Model{ID: id}
		if loc := modelMarker.FindStringSubmatchIndex(label); loc != nil {
			for _, w := range strings.Split(label[loc[2]:loc[3]], ",") {
				switch strings.TrimSpace(w) {
				case "current":
					m.Current = true
				case "default":
					m.Default = true
				}
			}
			label = strings.TrimSpace(label[:loc[0]])
		}
		m.Label = label
		m.Router = id == "auto"
		seen[id] = true
		models = append(models, m)
	}
	return models
}

// DefaultModel returns the model marked default, if any.
func DefaultModel(models []Model) (Model, bool) {
	for _, m := range models {
		if m.Default {
			return m, true
		}
	}
	return Model{}, false
}

// modelPattern accepts ids such as "gpt-5", "auto" and parameterised ids like
// "claude-opus-4-8[context=1m,effort=high,fast=false]". The first character
// must be alphanumeric, so an id can never read as a flag.
var modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+\-]*(\[[A-Za-z0-9._:/@+=,\-]*\])?$`)

func validModelID(id string) bool { return len(id) <= 200 && modelPattern.MatchString(id) }

// ValidateModel refuses a model id that could be taken for a flag or holds
// anything beyond the id alphabet. When known is non-empty the id must also
// be one of those models.
func ValidateModel(id string, known []Model) error {
	if !validModelID(id) {
		return &RefusedError{Reason: "invalid model id " + quoteClip(id)}
	}
	if len(known) == 0 {
		return nil
	}
	for _, m := range known {
		if m.ID == id {
			return nil
		}
	}
	return &RefusedError{Reason: "model " + quoteClip(id) + " is not in the CLI's model list"}
}
