// Package prompts holds the model prompts as text/template files embedded at
// build time. A template's Version is a hash of its text, so a changed prompt
// changes every cache key built from it.
package prompts

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Template is one parsed prompt template. Safe for concurrent use.
type Template struct {
	Name    string // file name without .tmpl
	Version string // first 12 hex digits of the sha256 of the text
	Text    string
	t       *template.Template
}

// Get returns the template prompts/<name>.tmpl. Missing keys in Render data
// are errors, so a typo in a template cannot silently render "<no value>".
func Get(name string) (Template, error) {
	raw, err := files.ReadFile(name + ".tmpl")
	if err != nil {
		return Template{}, fmt.Errorf("prompts: no template %q: %w", name, err)
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return Template{}, fmt.Errorf("prompts: parse %s: %w", name, err)
	}
	sum := sha256.Sum256(raw)
	return Template{Name: name, Version: hex.EncodeToString(sum[:])[:12], Text: string(raw), t: t}, nil
}

// Render executes the template with data.
func (t Template) Render(data any) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("prompts: render %s: %w", t.Name, err)
	}
	return b.String(), nil
}

// Versions names the templates with their text hashes ("a@v1,b@v2"), the
// part of a stage's cache key that changes when any of its prompts does.
func Versions(names ...string) (string, error) {
	vs := make([]string, 0, len(names))
	for _, n := range names {
		t, err := Get(n)
		if err != nil {
			return "", err
		}
		vs = append(vs, n+"@"+t.Version)
	}
	return strings.Join(vs, ","), nil
}
