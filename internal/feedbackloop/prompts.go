package feedbackloop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/codefeedback/codefeedback/prompts"
)

// promptNames are the templates the stage uses, all in prompts/.
var promptNames = []string{"simulate_writer", "simulate_task", "simulate_closing", "simulate_summary", "judge_request", "feedback_request", "followup_request"}

func isPromptName(n string) bool { return slices.Contains(promptNames, n) }

// tmpl is a prompt template, embedded or overridden from the pipeline file.
type tmpl struct {
	name, version string
	t             *template.Template
}

func (t tmpl) render(data any) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("simulate: render prompt %s: %w", t.name, err)
	}
	return b.String(), nil
}

// promptSet holds the stage's templates.
type promptSet map[string]tmpl

// loadPrompts returns the embedded templates with the overrides applied.
func loadPrompts(overrides map[string]string) (promptSet, error) {
	ps := promptSet{}
	for _, n := range promptNames {
		text, ok := overrides[n]
		if !ok {
			e, err := prompts.Get(n)
			if err != nil {
				return nil, err
			}
			text = e.Text
		}
		t, err := template.New(n).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("simulate: prompt %s: %w", n, err)
		}
		sum := sha256.Sum256([]byte(text))
		ps[n] = tmpl{name: n, version: hex.EncodeToString(sum[:])[:12], t: t}
	}
	for n := range overrides {
		if !isPromptName(n) {
			return nil, fmt.Errorf("simulate: prompts: unknown template %q", n)
		}
	}
	return ps, nil
}

// Version names every template with its text hash, e.g.
// "simulate_writer@1a2b3c4d5e6f,...".
func (ps promptSet) Version() string {
	var vs []string
	for _, n := range promptNames {
		vs = append(vs, n+"@"+ps[n].version)
	}
	return strings.Join(vs, ",")
}

// PromptVersion is the hash of the templates with overrides applied: the part
// of a stage's cache key that the loop's prompts contribute.
func PromptVersion(overrides map[string]string) (string, error) {
	ps, err := loadPrompts(overrides)
	if err != nil {
		return "", err
	}
	return ps.Version(), nil
}
