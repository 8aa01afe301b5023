package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// allCommands walks the command tree: every command and subcommand with
// its path ("cache stats"), the help command left out.
func allCommands(cmds []*cli.Command, prefix string) map[string]*cli.Command {
	out := map[string]*cli.Command{}
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		p := strings.TrimSpace(prefix + " " + c.Name)
		out[p] = c
		for k, v := range allCommands(c.Subcommands, p) {
			out[k] = v
		}
	}
	return out
}

// TestHelpExamples runs `codefeedback PATH --help` for every command: the
// help must end with an EXAMPLES section, and every example must call that
// command with flags it has.
func TestHelpExamples(t *testing.T) {
	cmds := allCommands(newApp().Commands, "")
	if len(cmds) < 20 {
		t.Fatalf("found %d commands, want the whole tree (25 when written)", len(cmds))
	}
	for path, c := range cmds {
		t.Run(path, func(t *testing.T) {
			app := newApp()
			var stdout, stderr bytes.Buffer
			app.Writer, app.ErrWriter = &stdout, &stderr
			args := append(append([]string{"codefeedback"}, strings.Fields(path)...), "--help")
			if err := runApp(context.Background(), app, args); err != nil {
				t.Fatalf("--help: %v", err)
			}
			help := stdout.String()
			i := strings.Index(help, "\nEXAMPLES:\n")
			if i < 0 {
				t.Fatalf("got help without EXAMPLES:\n%s", help)
			}
			ex := examples[path]
			for _, e := range ex {
				if !strings.Contains(help[i:], e) {
					t.Errorf("help lacks the example %q", e)
				}
				checkExample(t, c, path, e)
			}
		})
	}
	for path := range examples {
		if _, ok := cmds[path]; !ok && path != "" {
			t.Errorf("examples for %q, which is not a command", path)
		}
	}
}

var envPrefix = regexp.MustCompile(`^([A-Z_]+=\S+ )+`)

// checkExample checks that an example runs the command at path (after any
// VAR=value assignments or a pipe into it) and names only its flags.
func checkExample(t *testing.T, c *cli.Command, path, e string) {
	t.Helper()
	e, _, _ = strings.Cut(e, " #")
	var call string
	for _, part := range regexp.MustCompile(`\s*(\||&&|>)\s*`).Split(e, -1) {
		part = envPrefix.ReplaceAllString(strings.TrimSpace(part), "")
		if strings.HasPrefix(part, "codefeedback "+path+" ") || part == "codefeedback "+path {
			call = part
			break
		}
	}
	if call == "" {
		if len(c.Subcommands) > 0 {
			return // a group's example calls its subcommands
		}
		t.Errorf("example %q does not call codefeedback %s", e, path)
		return
	}
	// A group's example calls one of its subcommands: check that one's flags.
	if rest := strings.Fields(strings.TrimPrefix(call, "codefeedback "+path)); len(rest) > 0 {
		for _, sub := range c.Subcommands {
			if sub.HasName(rest[0]) {
				checkExample(t, sub, path+" "+rest[0], e)
				return
			}
		}
	}
	var names []string
	for _, f := range c.Flags {
		names = append(names, f.Names()...)
	}
	for _, tok := range strings.Fields(strings.TrimPrefix(call, "codefeedback "+path)) {
		if !strings.HasPrefix(tok, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(tok, "--"), "=")
		if !slices.Contains(names, name) {
			t.Errorf("example %q: codefeedback %s has no flag --%s", e, path, name)
		}
	}
}

// TestFlagPlaceholders: urfave/cli shows backquoted text in a flag's usage
// as the value's placeholder (`--download codefeedback bench fetch`), so a
// backquote may only hold a placeholder word such as FILE.
func TestFlagPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile("^[A-Z][A-Z_]*$")
	for path, c := range allCommands(newApp().Commands, "") {
		for _, f := range c.Flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			u := df.GetUsage()
			if strings.Count(u, "`")%2 != 0 {
				t.Errorf("%s --%s: odd number of backquotes in %q", path, f.Names()[0], u)
				continue
			}
			for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(u, -1) {
				if !placeholder.MatchString(m[1]) {
					t.Errorf("%s --%s: backquoted %q is shown as the placeholder; want an upper-case word or no backquotes", path, f.Names()[0], m[1])
				}
			}
		}
	}
}

// TestOneConcurrencyFlag: parallelism is --concurrency everywhere; audit's
// old --workers still works, hidden from --help.
func TestOneConcurrencyFlag(t *testing.T) {
	for path, c := range allCommands(newApp().Commands, "") {
		for _, f := range c.Flags {
			n := f.Names()[0]
			if isVisible(f) && slices.Contains([]string{"workers", "parallel", "jobs", "threads"}, n) {
				t.Errorf("%s --%s: want --concurrency (the old name hidden)", path, n)
			}
		}
	}
	app := newApp()
	var got int
	for _, c := range app.Commands {
		if c.Name == "audit" {
			c.Action = func(c *cli.Context) error { got = concurrency(c, "workers"); return nil }
		}
	}
	for _, tc := range []struct {
		args []string
		want int
	}{{[]string{"--workers", "3"}, 3}, {[]string{"--concurrency", "5"}, 5}, {[]string{"--concurrency", "5", "--workers", "3"}, 5}, {nil, 0}} {
		got = -1
		if err := runApp(context.Background(), app, append([]string{"codefeedback", "audit", "x.jsonl"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("audit %v: got concurrency %d, want %d", tc.args, got, tc.want)
		}
	}
}

func isVisible(f cli.Flag) bool {
	vf, ok := f.(cli.VisibleFlag)
	return !ok || vf.IsVisible()
}
