package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenDialogue is dialogue i of the golden corpus: what inspect's figures
// depend on varies with i (system and execution turns, repeated first turns
// and openings, code-less replies, fences of several languages and cases,
// non-ASCII text and spaces, messages past the dense length bound, models
// for the template share, bad records).
func goldenDialogue(i int) Dialogue {
	x := uint64(i)*0x9E3779B97F4A7C15 + 7
	next := func(n int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(n)) }
	prose := func(words int) string {
		ws := make([]string, words)
		for w := range ws {
			ws[w] = benchWords[next(len(benchWords))]
		}
		return strings.Join(ws, " ")
	}
	openings := []string{"Here is the corrected code:", "Sure! Let's fix that.", "\n\n  The error means that", "Voilà\u00a0— la fonction corrigée :", "好的，这是代码", "Here is the corrected code:"}
	fences := []string{"```python\nprint(1)\n```", "```Python\nx = 2\n```", "```bash\nls -l\n```", "```SQL\nSELECT 1;\n```", "~~~js\nconsole.log(1)\n~~~", "inline ```python not a fence", ""}
	assistant := func() string {
		var b strings.Builder
		if next(3) == 0 {
			b.WriteString(openings[next(len(openings))])
		} else {
			b.WriteString(prose(3 + next(8)))
		}
		b.WriteString(" " + prose(next(60)) + "\n")
		b.WriteString(fences[next(len(fences))])
		return b.String()
	}
	first := fmt.Sprintf("Task %d: %s", i, prose(10+next(40)))
	if i%7 == 0 {
		first = fmt.Sprintf("Write a function that sorts %d numbers.", i%5) // repeated first turns
	}
	msgs := []Message{{Role: RoleUser, Content: first}, {Role: RoleAssistant, Content: assistant()}}
	if i%4 == 1 {
		msgs = append([]Message{{Role: RoleSystem, Content: "You are a careful programmer.\u3000"}}, msgs...)
	}
	for t := next(4); t > 0; t-- {
		msgs = append(msgs, Message{Role: RoleExecution, Content: fmt.Sprintf("Traceback (most recent call last):\nValueError: %d", next(1000))},
			Message{Role: RoleAssistant, Content: assistant()})
		if next(2) == 0 {
			msgs = append(msgs, Message{Role: RoleUser, Content: "café naïve " + prose(next(20))})
		}
	}
	switch {
	case i%50 == 3:
		msgs[len(msgs)-1].Content += strings.Repeat("long line of output ", 3500+i) // past denseMax
	case i%13 == 4:
		msgs = append(msgs, Message{Role: RoleAssistant, Content: ""})
	}
	d := Dialogue{ID: fmt.Sprintf("golden-%d", i), Messages: msgs, Stage: "simulate", Method: "execution-feedback"}
	if i%3 == 0 {
		d.Model = "m1"
	}
	switch i % 61 {
	case 5:
		d.Messages[0].Role = "narrator"
	case 9:
		d.Messages = nil
	}
	return d
}

// TestInspectGolden: inspect's printed report of one corpus in each input
// format (native and Code-Feedback layouts, Parquet in many row groups and
// JSONL), without and with samples, and with the openings bound low enough
// to prune, is the golden file's: any change to a printed figure fails it
// (go test -run TestInspectGolden -update rewrites them).
func TestInspectGolden(t *testing.T) {
	dir := t.TempDir()
	var ds []Dialogue
	for i := 0; i < 1500; i++ {
		ds = append(ds, goldenDialogue(i))
	}
	inputs := map[string]string{}
	native := filepath.Join(dir, "native.parquet")
	pw, err := createParquetDialogues(native, ParquetCompression("zstd"), RowGroupBytes(96<<10))
	if err != nil {
		t.Fatal(err)
	}
	cfPath := filepath.Join(dir, "codefeedback.parquet")
	cw := testParquetWriter(t, cfPath, func(r *CodeFeedbackRow) int64 { return messagesBytes(r.Messages) }, 96<<10)
	var nativeJSONL, cfJSONL []string
	for i := range ds {
		if err := pw.Write(ds[i]); err != nil {
			t.Fatal(err)
		}
		cf := ToCodeFeedback(&ds[i])
		var ms []ParquetMessage
		for _, m := range cf.Messages {
			ms = append(ms, ParquetMessage(m))
		}
		if err := cw.add(CodeFeedbackRow{ID: ds[i].ID, Messages: ms}); err != nil {
			t.Fatal(err)
		}
		nativeJSONL = append(nativeJSONL, mustJSON(t, ds[i]))
		cfJSONL = append(cfJSONL, mustJSON(t, cf))
		if i == 700 {
			nativeJSONL = append(nativeJSONL, `{"id":"broken", "messages": [`)
		}
	}
	for _, w := range []interface{ Close() error }{pw, cw} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{native, cfPath} {
		if n := rowGroups(t, p); n < 3 {
			t.Fatalf("%s: %d row groups, want several (the parallel scan and its merge)", filepath.Base(p), n)
		}
	}
	inputs["native.parquet"], inputs["codefeedback.parquet"] = native, cfPath
	for name, lines := range map[string][]string{"native.jsonl": nativeJSONL, "codefeedback.jsonl": cfJSONL} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs[name] = p
	}
	for name, path := range inputs {
		for _, tc := range []struct {
			suffix      string
			sample      int
			maxOpenings int
		}{{"", 0, maxOpenings}, {"-sample3", 3, maxOpenings}, {"-pruned", 0, 64}} {
			t.Run(name+tc.suffix, func(t *testing.T) {
				defer func(o int) { maxOpenings = o }(maxOpenings)
				maxOpenings = tc.maxOpenings
				rep, err := Inspect(context.Background(), path, tc.sample)
				if err != nil {
					t.Fatal(err)
				}
				rep.File = name
				var b strings.Builder
				rep.Render(&b)
				got := strings.ReplaceAll(b.String(), dir+string(filepath.Separator), "") // bad records name the file
				golden := filepath.Join("testdata", "inspect", name+tc.suffix+".golden")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("inspect %s: got\n%s\nwant (%s)\n%s", name, got, golden, want)
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
