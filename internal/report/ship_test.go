package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/internal/verify"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/codefeedback/codefeedback/schema/loaders"
)

// shipSample is how many of the sample run's dialogues every layout is
// verified on (re-running all of them in every layout would cost minutes);
// the loader rules are checked on all of them.
const shipSample = 8

// TestSampleRunShips exports the sample run's dialogues in every layout and
// checks each by the rules of what loads it (OpenAI's format checks,
// LLaMA-Factory's sharegpt rules, the Code-Feedback layout, DuckDB reading
// the Parquet files with their column types), then has verify certify each
// layout with 0 mismatches, and catches an edited visible execution text.
func TestSampleRunShips(t *testing.T) {
	s := runSample(t)
	ctx := context.Background()
	native := nativeOutput(t, s)
	dir := t.TempDir()
	all, err := schema.ReadAll[schema.Dialogue](native)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < shipSample {
		t.Fatalf("the sample run published %d dialogues, want at least %d", len(all), shipSample)
	}
	head := filepath.Join(dir, "head.jsonl")
	if err := schema.WriteAll(head, all[:shipSample]); err != nil {
		t.Fatal(err)
	}
	ex, err := executors.Open(ctx, "bwrap://")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	mods := filepath.Join(must(sharedtest.Root()), ".ci", "node_modules")
	if d := os.Getenv("DUCKDB_NODE_MODULES"); d != "" {
		mods = d
	}
	ci := os.Getenv("CI") == "true" || os.Getenv("CI") == "1"
	for _, tc := range []struct {
		name  string
		file  string
		o     schema.ExportOptions
		check func(path string, line []byte) []string
		duck  string // Parquet: the roles DuckDB may see
	}{
		{"native jsonl", "native.jsonl", schema.ExportOptions{To: schema.ExportNative}, nil, ""},
		{"native parquet", "native.parquet", schema.ExportOptions{To: schema.ExportNative}, nil, "user,assistant,execution,system"},
		{"codefeedback jsonl", "cf.jsonl", schema.ExportOptions{}, func(_ string, l []byte) []string { return loaders.CodeFeedback(l) }, ""},
		{"codefeedback parquet", "cf.parquet", schema.ExportOptions{}, nil, "user,assistant"},
		{"sharegpt", "sg.jsonl", schema.ExportOptions{To: schema.ExportShareGPT}, shareGPTRules(t), ""},
		{"openai", "oa.jsonl", schema.ExportOptions{To: schema.ExportOpenAI}, func(_ string, l []byte) []string { return loaders.OpenAI(l) }, ""},
		{"openai-tools", "oat.jsonl", schema.ExportOptions{To: schema.ExportOpenAITools}, func(_ string, l []byte) []string { return loaders.OpenAI(l) }, ""},
		{"openai turns", "oaturns.jsonl", schema.ExportOptions{To: schema.ExportOpenAI, Split: schema.SplitTurns}, func(_ string, l []byte) []string { return loaders.OpenAI(l) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := filepath.Join(dir, "full-"+tc.file)
			st, err := schema.Export(ctx, native, full, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				b, err := os.ReadFile(full)
				if err != nil {
					t.Fatal(err)
				}
				for i, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
					if errs := tc.check(full, l); len(errs) > 0 {
						t.Fatalf("sample %d breaks its loader's rules: %v\n%.400s", i, errs, l)
					}
				}
			}
			if tc.duck != "" {
				_, err := loaders.DuckDB(ctx, mods, full, st.Written, "VARCHAR", tc.duck)
				switch {
				case errors.Is(err, loaders.ErrNoDuckDB) && !ci:
					t.Logf("DuckDB check skipped: %v", err)
				case err != nil:
					t.Fatal(err)
				}
			}
			part := filepath.Join(dir, tc.file)
			if _, err := schema.Export(ctx, head, part, tc.o); err != nil {
				t.Fatal(err)
			}
			rep, err := (&verify.Checker{Exec: ex}).Dataset(ctx, schema.ReadShipped(ctx, part))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range rep.Mismatches {
				t.Errorf("mismatch: %s", m)
			}
			t.Logf("%s: %d dialogues, %d texts checked, %d re-run (%d agreed), not re-runnable: %v", tc.name, rep.Dialogues, rep.Texts, rep.Executions, rep.Agreed, rep.Reasons())
			if strings.HasPrefix(tc.name, "native") && (rep.Texts == 0 || rep.Executions == 0) {
				t.Errorf("native layout: %d texts checked and %d executions re-run, want both", rep.Texts, rep.Executions)
			}
		})
	}

	// An edited "Execution result" text in a native file is caught.
	edited := all[0]
	edited.Messages = append([]schema.Message(nil), edited.Messages...)
	turn := -1
	for i, m := range edited.Messages {
		if m.Role == schema.RoleExecution {
			edited.Messages[i].Content = strings.Replace(m.Content, "test", "tset", 1) + "\n(edited)"
			turn = i
			break
		}
	}
	rep, err := (&verify.Checker{Exec: ex, Opts: verify.Options{NoRerun: true}}).Dialogue(ctx, &edited)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 1 || rep.Mismatches[0].Check != verify.CheckText || rep.Mismatches[0].Turn != turn {
		t.Errorf("edited execution text at turn %d: mismatches %v, want one text mismatch there", turn, rep.Mismatches)
	}
}

// TestSampleRunSizes: a dialogue record is at most 3x its text (the judge
// is referenced, not stored), and report.html grows with its sample, not
// with the size of the records.
func TestSampleRunSizes(t *testing.T) {
	s := runSample(t)
	native := nativeOutput(t, s)
	ds, err := schema.ReadAll[schema.Dialogue](native)
	if err != nil {
		t.Fatal(err)
	}
	var recBytes, textBytes, worst float64
	for _, d := range ds {
		b, _ := json.Marshal(d)
		text := 0
		for _, m := range d.Messages {
			text += len(m.Content)
		}
		ratio := float64(len(b)) / float64(text)
		if ratio > 3 {
			t.Errorf("dialogue %s: record %d bytes for %d bytes of text (%.2fx), want at most 3x", d.ID, len(b), text, ratio)
		}
		worst = max(worst, ratio)
		recBytes += float64(len(b))
		textBytes += float64(text)
	}
	t.Logf("%d dialogues: %.0f bytes of records for %.0f bytes of text (%.2fx overall, %.2fx worst)", len(ds), recBytes, textBytes, recBytes/textBytes, worst)

	// The page with no sample, then with samples of growing size: what a
	// sampled dialogue adds is bounded by a multiple of its text.
	size := func(n int) int {
		d, err := Collect(context.Background(), s.runDir, Options{Sample: n})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteHTML(&buf, d); err != nil {
			t.Fatal(err)
		}
		return buf.Len()
	}
	base := size(-1)
	for _, n := range []int{5, 20} {
		if n > len(ds) {
			n = len(ds)
		}
		d, err := Collect(context.Background(), s.runDir, Options{Sample: n})
		if err != nil {
			t.Fatal(err)
		}
		text := 0
		for _, id := range d.SampleIDs {
			for _, dl := range ds {
				if dl.ID == id {
					for _, m := range dl.Messages {
						text += len(m.Content)
					}
				}
			}
		}
		grown := size(n) - base
		t.Logf("report.html: %d bytes without a sample, +%d bytes for %d sampled dialogues holding %d bytes of text (%.1fx)", base, grown, n, text, float64(grown)/float64(text))
		if grown > 8*text+4096*n {
			t.Errorf("a sample of %d dialogues (%d bytes of text) adds %d bytes to the report, want at most 8x the text plus 4 KiB each", n, text, grown)
		}
	}
}

// nativeOutput is the sample run's published native dialogue file.
func nativeOutput(t *testing.T, s *sampleRun) string {
	t.Helper()
	for _, o := range s.manifest.Outputs {
		if o.Kind == "dialogue" && (o.Format == "jsonl" || o.Format == "native") && o.From == s.manifest.Outputs[0].From {
			return filepath.Join(s.dir, o.Path)
		}
	}
	t.Fatal("the sample run published no native dialogue file")
	return ""
}

func shareGPTRules(t *testing.T) func(path string, line []byte) []string {
	return func(path string, line []byte) []string {
		_, info, err := loaders.ShareGPTBeside(path)
		if err != nil {
			t.Fatal(err)
		}
		return loaders.ShareGPT(line, info)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
