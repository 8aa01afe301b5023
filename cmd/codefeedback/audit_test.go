package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestAuditCommand runs `codefeedback audit DATASET --flags...` on a small
// Code-Feedback file holding one HumanEval task among clean dialogues.
func TestAuditCommand(t *testing.T) {
	he, err := schema.LoadProblems(sharedtest.Path(t, "humaneval/HumanEval.jsonl.gz"))
	benchDir := sharedtest.BenchDir(t, "humaneval/HumanEval.jsonl.gz")
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
	writeJSONL(t, in, recs)
	out := filepath.Join(dir, "clean.jsonl")
	run := func(args ...string) (string, error) {
		app := newApp()
		var stdout, stderr bytes.Buffer
		app.Writer, app.ErrWriter = &stdout, &stderr
		err := runApp(context.Background(), app, append([]string{"codefeedback", "audit"}, args...))
		return stdout.String(), err
	}

	stdout, err := run(in, "--against", "humaneval", "--bench-dir", benchDir, "--json", "--decontaminate", out, "--fail-on-leak")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitLeak {
		t.Fatalf("got error %v, want exit code %d", err, exitLeak)
	}
	var rep leak.Report
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
	removed, err := schema.ReadAll[leak.Removed](out + ".removed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].DialogueID != "2" || removed[0].Findings[0].TaskID != "HumanEval/0" {
		t.Errorf("removed: %+v, want dialogue 2 for HumanEval/0", removed)
	}

	// Flags before DATASET work too; the table is the default output.
	stdout, err = run("--against", "humaneval", "--bench-dir", benchDir, in)
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
	if _, err := run(in, "--against", "nonesuch", "--bench-dir", benchDir); !errors.As(err, &ee) || ee.code != exitBadData {
		t.Errorf("unknown benchmark: got %v, want exit code %d", err, exitBadData)
	}
}

// writeJSONL writes recs to path, one JSON record a line.
func writeJSONL(t *testing.T, path string, recs []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAuditCommandJudge runs `codefeedback audit --embed --judge-model` on a
// reworded HumanEval/11 ("exclusive or" for XOR, no code) among clean
// dialogues, with a judge scripted on a loopback server: the built-in
// retriever must bring HumanEval/11 to the judge, the finding must name it,
// and a second run must take every answer from the judge cache.
func TestAuditCommandJudge(t *testing.T) {
	benchDir := sharedtest.BenchDir(t, "humaneval/HumanEval.jsonl.gz", "mbpp/mbpp.jsonl") // skips without the shared data
	dir := t.TempDir()
	in := filepath.Join(dir, "dialogues.jsonl")
	recs := []map[string]any{
		{"id": "para", "messages": []map[string]string{{"role": "user", "content": "Given two equal-length text strings made only of the characters 0 and 1, produce the string you get by combining them position by position with exclusive or."}, {"role": "assistant", "content": "Sure, walk both strings together and compare the characters."}}},
		{"id": "clean", "messages": []map[string]string{{"role": "user", "content": "How do I read a CSV file with pandas and print the first five rows of it?"}, {"role": "assistant", "content": "Use read_csv and head:\n```python\nimport pandas as pd\nprint(pd.read_csv('data.csv').head())\n```"}}},
	}
	writeJSONL(t, in, recs)
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		msg := c.LastUser()
		if v, ok := calibrationReply(msg); ok {
			return llmtest.Reply{Text: v}
		}
		if strings.Contains(msg, "Perform binary XOR") && strings.Contains(msg, "exclusive or") {
			return llmtest.Reply{Text: "same - both XOR two binary strings."}
		}
		return llmtest.Reply{Text: "different - other tasks."}
	})
	t.Setenv("FAKE_JUDGE_KEY", "unused")
	run := func() leak.Report {
		app := newApp()
		var stdout, stderr bytes.Buffer
		app.Writer, app.ErrWriter = &stdout, &stderr
		err := runApp(context.Background(), app, []string{"codefeedback", "audit", in, "--against", "humaneval,mbpp", "--bench-dir", benchDir,
			"--json", "--embed", "--judge-model", "fake-chat", "--base-url", srv.URL, "--api-key-env", "FAKE_JUDGE_KEY", "--judge-cache", filepath.Join(dir, "judge.db")})
		if err != nil {
			t.Fatalf("audit: %v\n%s", err, stderr.String())
		}
		t.Logf("stderr: %s", stderr.String())
		var rep leak.Report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("--json output: %v", err)
		}
		return rep
	}
	rep := run()
	if len(rep.FlaggedIDs) != 1 || rep.FlaggedIDs[0] != "para" || len(rep.Findings) != 1 ||
		rep.Findings[0].TaskID != "HumanEval/11" || rep.Findings[0].Method != leak.MethodEmbedding {
		t.Fatalf("flagged %v with %+v, want para against HumanEval/11 by the judge", rep.FlaggedIDs, rep.Findings)
	}
	calls := srv.Calls("/v1/chat/completions")
	cal := len(leak.CalibrationPairs())
	if calls <= cal || calls > cal+2*leak.DefaultParaphraseTopK {
		t.Errorf("%d judge calls, want %d calibration calls and 1 to %d (top %d per dialogue)", calls, cal, 2*leak.DefaultParaphraseTopK, leak.DefaultParaphraseTopK)
	}
	if again := run(); len(again.FlaggedIDs) != 1 || srv.Calls("/v1/chat/completions") != calls {
		t.Errorf("re-run: flagged %v with %d more judge calls, want the same finding from the cache", again.FlaggedIDs, srv.Calls("/v1/chat/completions")-calls)
	}
}

// calibrationReply answers a calibration pair of the judge prompt msg as a
// good judge does (ok false for other prompts).
func calibrationReply(msg string) (string, bool) {
	for _, p := range leak.CalibrationPairs() {
		if strings.Contains(msg, p.Statement) && strings.Contains(msg, p.Turn) {
			if p.Same {
				return "same - one computation, reworded.", true
			}
			return "different - other computations.", true
		}
	}
	return "", false
}

// TestAuditCommandJudgeFailsClosed: a judge that answers in an unexpected
// form must never pass the audit. Garbage from the start fails its
// calibration (exit 1, the agreement figure named); a judge that passes
// calibration but then answers garbage, even after the repair request,
// leaves its pairs unknown: the report lists them and the exit is 1, not 0.
func TestAuditCommandJudgeFailsClosed(t *testing.T) {
	benchDir := sharedtest.BenchDir(t, "humaneval/HumanEval.jsonl.gz", "mbpp/mbpp.jsonl") // skips without the shared data
	dir := t.TempDir()
	in := filepath.Join(dir, "dialogues.jsonl")
	writeJSONL(t, in, []map[string]any{
		{"id": "para", "messages": []map[string]string{{"role": "user", "content": "Given two equal-length text strings made only of the characters 0 and 1, produce the string you get by combining them position by position with exclusive or."}, {"role": "assistant", "content": "Sure, walk both strings together and compare the characters."}}},
	})
	t.Setenv("FAKE_JUDGE_KEY", "unused")
	for _, c := range []struct {
		name       string
		calibrated bool // the judge answers the calibration pairs right
		want       string
	}{
		{"garbage throughout", false, "failed its calibration: agreed with 0 of"},
		{"garbage after calibration", true, "answers in no readable form"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Script(func(call llmtest.Call) llmtest.Reply {
				if v, ok := calibrationReply(call.LastUser()); ok && c.calibrated {
					return llmtest.Reply{Text: v}
				}
				return llmtest.Reply{Text: `{"verdict": 1}`}
			})
			app := newApp()
			var stdout, stderr bytes.Buffer
			app.Writer, app.ErrWriter = &stdout, &stderr
			err := runApp(context.Background(), app, []string{"codefeedback", "audit", in, "--against", "humaneval,mbpp", "--bench-dir", benchDir,
				"--json", "--embed", "--judge-model", "fake-chat", "--base-url", srv.URL, "--api-key-env", "FAKE_JUDGE_KEY", "--judge-cache", filepath.Join(dir, c.name+".db")})
			if err == nil || exitCode(err) != exitFailed || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("audit with a garbage judge: got %v (exit %d), want exit %d saying %q", err, exitCode(err), exitFailed, c.want)
			}
			if !c.calibrated {
				return
			}
			var rep leak.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("--json output: %v", err)
			}
			if rep.Judge == nil || rep.Judge.Unknown == 0 || len(rep.Judge.UnknownPairs) != int(rep.Judge.Unknown) || rep.Judge.Same != 0 {
				t.Errorf("report judge section %+v, want unknown pairs counted and listed, none the same", rep.Judge)
			}
			// Each unknown pair was asked twice: the question and the repair request.
			if calls := srv.Calls("/v1/chat/completions"); calls != len(leak.CalibrationPairs())+2*int(rep.Judge.Pairs) {
				t.Errorf("%d judge calls, want %d calibration and 2 per judged pair (%d)", calls, len(leak.CalibrationPairs()), rep.Judge.Pairs)
			}
		})
	}
}
