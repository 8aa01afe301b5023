package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/codefeedback/codefeedback/stages/audit"
)

// TestAuditCommand runs `codefeedback audit DATASET --flags...` on a small
// Code-Feedback file holding one HumanEval task among clean dialogues.
func TestAuditCommand(t *testing.T) {
	he, err := schema.LoadProblems(sharedtest.Path(t, "humaneval/HumanEval.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "dialogues.jsonl")
	recs := []map[string]any{
		{"id": 1, "messages": []map[string]string{{"role": "user", "content": "How do I reverse a list in Python?"}, {"role": "assistant", "content": "Use slicing:\n```python\nrev = items[::-1]\nprint(rev)\n```"}}},
		{"id": 2, "messages": []map[string]string{{"role": "user", "content": "Complete this:\n```python\n" + he[0].Prompt + "```"}, {"role": "assistant", "content": "```python\n" + he[0].Prompt + he[0].Solution + "```"}}},
		{"id": 3, "messages": []map[string]string{{"role": "user", "content": "Write hello world in Go."}, {"role": "assistant", "content": "```go\npackage main\nfunc main() { println(\"hello\") }\n```"}}},
	}
	var buf bytes.Buffer
	for _, r := range recs {
		b, _ := json.Marshal(r)
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "clean.jsonl")
	run := func(args ...string) (string, error) {
		app := newApp()
		var stdout, stderr bytes.Buffer
		app.Writer, app.ErrWriter = &stdout, &stderr
		err := runApp(context.Background(), app, append([]string{"codefeedback", "audit"}, args...))
		return stdout.String(), err
	}

	stdout, err := run(in, "--against", "humaneval", "--bench-dir", sharedtest.DataDir(), "--json", "--decontaminate", out, "--fail-on-leak")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitLeak {
		t.Fatalf("got error %v, want exit code %d", err, exitLeak)
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if rep.Dialogues != 3 || rep.Flagged != 1 || len(rep.FlaggedIDs) != 1 || rep.FlaggedIDs[0] != "2" {
		t.Errorf("report: %d dialogues, flagged %v, want 3 and [2]", rep.Dialogues, rep.FlaggedIDs)
	}
	kept, err := schema.ReadAll[json.RawMessage](out)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 {
		t.Errorf("decontaminated file has %d records, want 2", len(kept))
	}
	removed, err := schema.ReadAll[audit.Removed](out + ".removed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].DialogueID != "2" || removed[0].Findings[0].TaskID != "HumanEval/0" {
		t.Errorf("removed: %+v, want dialogue 2 for HumanEval/0", removed)
	}

	// Flags before DATASET work too; the table is the default output.
	stdout, err = run("--against", "humaneval", "--bench-dir", sharedtest.DataDir(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains([]byte(stdout), []byte("HumanEval/0")) || !bytes.Contains([]byte(stdout), []byte("overall")) {
		t.Errorf("table output lacks the finding or the overall row:\n%s", stdout)
	}

	for _, args := range [][]string{{}, {in, "extra"}, {in, "--window", "0"}, {in, "--removed", "x.jsonl"}} {
		_, err := run(args...)
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("args %q: got %v, want exit code 2", args, err)
		}
	}
	if _, err := run(in, "--against", "nonesuch", "--bench-dir", sharedtest.DataDir()); !errors.As(err, &ee) || ee.code != exitBadData {
		t.Errorf("unknown benchmark: got %v, want exit code %d", err, exitBadData)
	}
}
