package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema/loaders"
	"github.com/parquet-go/parquet-go"
)

func sampleDialogue(i int) Dialogue {
	pass := i%2 == 0
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a coding assistant."},
		{Role: RoleUser, Content: fmt.Sprintf("Write a function that returns %d.", i)},
		{Role: RoleAssistant, Content: fmt.Sprintf("```python\ndef f():\n    return %d\nprint(f())\n```", i)},
		{Role: RoleExecution, Content: fmt.Sprintf("%d\n", i), Exec: &Execution{Language: "python", Code: fmt.Sprintf("def f():\n    return %d\nprint(f())", i), Driver: "bwrap", ExitCode: 0, Stdout: fmt.Sprintf("%d\n", i), Passed: &pass, Duration: 1234}},
		{Role: RoleAssistant, Content: fmt.Sprintf("It prints %d.", i)},
		{Role: RoleUser, Content: "Make it faster.", Feedback: &Feedback{Category: "efficiency", Body: json.RawMessage(`{"note":"x"}`)}},
		{Role: RoleAssistant, Content: "It is already O(1)."},
	}
	return Dialogue{ID: DialogueID(msgs), Messages: msgs, Stage: "simulate", Method: "execution-feedback", Model: "m", Prompt: "v1",
		Sources: []string{"q-1"}, Labels: map[string]string{"final_status": "pass"}}
}

// TestParquetRoundTrip: dialogues survive Parquet (snappy and zstd, several
// row groups) field for field, and parquet-go reads messages as
// LIST<STRUCT<role, content>>.
func TestParquetRoundTrip(t *testing.T) {
	for _, codec := range []string{"snappy", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.parquet")
			var ds []Dialogue
			for i := 0; i < 3000; i++ {
				ds = append(ds, sampleDialogue(i))
			}
			if err := WriteAll(path, ds, ParquetCompression(codec), RowGroupBytes(64<<10)); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAll[Dialogue](path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ds) {
				t.Fatalf("got %d dialogues, want %d", len(got), len(ds))
			}
			for i := range ds {
				if !reflect.DeepEqual(got[i], ds[i]) {
					t.Fatalf("dialogue %d differs:\n got %+v\nwant %+v", i, got[i], ds[i])
				}
			}
			f, _ := os.Open(path)
			defer f.Close()
			st, _ := f.Stat()
			pf, err := parquet.OpenFile(f, st.Size())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(pf.RowGroups()); n < 2 {
				t.Errorf("got %d row groups, want several with a 64 KiB budget", n)
			}
			msgs, _ := pf.Schema().Lookup("messages", "list", "element", "role")
			if msgs.Node == nil || !strings.Contains(pf.Schema().String(), "group messages (LIST)") {
				t.Errorf("messages is not LIST<STRUCT<role, content>>:\n%s", pf.Schema())
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

// exportLines exports ds in layout o to a JSONL file and returns its lines.
func exportLines(t *testing.T, ds []Dialogue, o ExportOptions) (string, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := WriteAll(in, ds); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	if _, err := Export(context.Background(), in, out, o); err != nil {
		t.Fatalf("export %+v: %v", o, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, bytes.Split(bytes.TrimSpace(b), []byte("\n"))
}

// TestExportLoaderRules exports dialogues in every layout and split and
// checks each line by the rules of what loads it.
func TestExportLoaderRules(t *testing.T) {
	var ds []Dialogue
	for i := 0; i < 20; i++ {
		ds = append(ds, sampleDialogue(i))
	}
	for _, tc := range []struct {
		name    string
		o       ExportOptions
		samples int // in all: a failing turn is no target of its own (odd i fail)
		check   func(path string, line []byte) []string
	}{
		{"codefeedback", ExportOptions{}, 20, func(_ string, l []byte) []string { return loaders.CodeFeedback(l) }},
		{"codefeedback turns", ExportOptions{Split: SplitTurns}, 50, func(_ string, l []byte) []string { return loaders.CodeFeedback(l) }},
		{"openai", ExportOptions{To: ExportOpenAI}, 20, func(_ string, l []byte) []string { return loaders.OpenAI(l) }},
		{"openai turns", ExportOptions{To: ExportOpenAI, Split: SplitTurns}, 50, func(_ string, l []byte) []string { return loaders.OpenAI(l) }},
		{"openai weights", ExportOptions{To: ExportOpenAI, Split: SplitWeights}, 20, func(_ string, l []byte) []string { return loaders.OpenAI(l) }},
		{"openai-tools", ExportOptions{To: ExportOpenAITools}, 20, func(_ string, l []byte) []string { return loaders.OpenAI(l) }},
		{"openai-tools turns", ExportOptions{To: ExportOpenAITools, Split: SplitTurns}, 50, func(_ string, l []byte) []string { return loaders.OpenAI(l) }},
		{"sharegpt", ExportOptions{To: ExportShareGPT}, 20, shareGPTCheck(t)},
		{"sharegpt observation", ExportOptions{To: ExportShareGPT, ExecAs: ExecAsTool}, 20, shareGPTCheck(t)},
		{"sharegpt turns", ExportOptions{To: ExportShareGPT, Split: SplitTurns}, 50, shareGPTCheck(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := exportLines(t, ds, tc.o)
			if len(lines) != tc.samples {
				t.Fatalf("got %d samples, want %d", len(lines), tc.samples)
			}
			for i, l := range lines {
				if errs := tc.check(path, l); len(errs) > 0 {
					t.Fatalf("sample %d breaks its loader's rules: %v\n%s", i, errs, l)
				}
			}
		})
	}
}

// shareGPTCheck checks a line against the dataset_info.json entry written
// beside the file.
func shareGPTCheck(t *testing.T) func(path string, line []byte) []string {
	return func(path string, line []byte) []string {
		name, info, err := loaders.ShareGPTBeside(path)
		if err != nil {
			t.Fatal(err)
		}
		if name != "out" {
			t.Fatalf("dataset_info.json names %s's dataset %q, want out", filepath.Base(path), name)
		}
		return loaders.ShareGPT(line, info)
	}
}

// TestLoaderChecksCatch: each loader check rejects what its loader would.
func TestLoaderChecksCatch(t *testing.T) {
	info := ShareGPTInfoFor("x.jsonl")
	var li loaders.ShareGPTInfo
	b, _ := json.Marshal(info)
	json.Unmarshal(b, &li)
	for _, tc := range []struct {
		name string
		errs []string
	}{
		{"openai execution role", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"q"},{"role":"execution","content":"1"},{"role":"assistant","content":"a"}]}`))},
		{"openai no assistant", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"q"}]}`))},
		{"openai content not string", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":["q"]},{"role":"assistant","content":"a"}]}`))},
		{"openai weight on user", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"q","weight":0},{"role":"assistant","content":"a"}]}`))},
		{"openai call without tools", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"execute_code","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"},{"role":"assistant","content":"a"}]}`))},
		{"openai orphan tool", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"x","content":"1"},{"role":"assistant","content":"a"}]}`))},
		{"openai too long", loaders.OpenAI([]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 70000) + `"},{"role":"assistant","content":"a"}]}`))},
		{"sharegpt two humans", loaders.ShareGPT([]byte(`{"conversations":[{"from":"human","value":"q"},{"from":"human","value":"q"},{"from":"gpt","value":"a"}]}`), li)},
		{"sharegpt ends on human", loaders.ShareGPT([]byte(`{"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a"},{"from":"human","value":"q"}]}`), li)},
		{"codefeedback execution role", loaders.CodeFeedback([]byte(`{"id":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"execution","content":"1"},{"role":"assistant","content":"a"}]}`))},
		{"codefeedback system", loaders.CodeFeedback([]byte(`{"id":"x","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`))},
	} {
		if len(tc.errs) == 0 {
			t.Errorf("%s: accepted, want rejected", tc.name)
		}
	}
}

// TestExportFormats checks each layout's rendering of an execution turn.
func TestExportFormats(t *testing.T) {
	d := sampleDialogue(7)
	cf := ToCodeFeedback(&d)
	if len(cf.Messages) != 6 || cf.Messages[2].Role != "user" || cf.Messages[2].Content != "Execution result: \n7\n" {
		t.Errorf("codefeedback execution turn: got %+v", cf.Messages)
	}
	if !strings.HasPrefix(cf.Messages[0].Content, "You are a coding assistant.\n\nWrite") {
		t.Errorf("codefeedback: system turn not folded into the first user turn: %q", cf.Messages[0].Content)
	}
	if string(cf.ID) != `"`+d.ID+`"` {
		t.Errorf("codefeedback id: got %s want quoted %s", cf.ID, d.ID)
	}
	sg := ToShareGPT(&d, ExecAsUser)
	wantFrom := []string{"human", "gpt", "human", "gpt", "human", "gpt"}
	if sg.System != "You are a coding assistant." || len(sg.Conversations) != len(wantFrom) {
		t.Fatalf("sharegpt: got system %q and %d turns", sg.System, len(sg.Conversations))
	}
	for i, tr := range sg.Conversations {
		if tr.From != wantFrom[i] {
			t.Errorf("sharegpt turn %d: got from %q want %q", i, tr.From, wantFrom[i])
		}
	}
	if got := ToShareGPT(&d, ExecAsTool).Conversations[2].From; got != "observation" {
		t.Errorf("sharegpt tool: got %q want observation", got)
	}
	oa := ToOpenAI(&d, ExecAsTool)
	if oa.Messages[3].Role != "tool" || oa.Messages[3].ToolCallID == "" || len(oa.Messages[2].ToolCalls) != 1 || oa.Messages[2].ToolCalls[0].ID != oa.Messages[3].ToolCallID {
		t.Errorf("openai tool rendering: got %+v / %+v", oa.Messages[2], oa.Messages[3])
	}
	if len(oa.Tools) != 1 || oa.Tools[0].Function.Name != ExecuteToolName {
		t.Errorf("openai tools: got %+v", oa.Tools)
	}
	var args map[string]string
	json.Unmarshal([]byte(oa.Messages[2].ToolCalls[0].Function.Arguments), &args)
	if args["code"] != d.Messages[3].Exec.Code || args["language"] != "python" {
		t.Errorf("tool call arguments: got %v", args)
	}
	if oa.Messages[2].Content != nil {
		t.Errorf("the executed block should move into the call, leaving no text; got %q", *oa.Messages[2].Content)
	}
	if ou := ToOpenAI(&d, ExecAsUser); ou.Messages[3].Role != "user" || !strings.HasPrefix(*ou.Messages[3].Content, ExecutionPrefix) || ou.Tools != nil {
		t.Errorf("openai user rendering: got %+v", ou.Messages[3])
	}
}

// TestShowsFailure: which execution turns show failed code.
func TestShowsFailure(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		m    Message
		want bool
	}{
		{Message{Role: RoleExecution, Content: "x", Exec: &Execution{Passed: &f}}, true},
		{Message{Role: RoleExecution, Content: "x", Exec: &Execution{Passed: &tr}}, false},
		{Message{Role: RoleExecution, Content: "x", Exec: &Execution{ExitCode: 1}}, true},
		{Message{Role: RoleExecution, Content: "42", Exec: &Execution{}}, false},
		{Message{Role: RoleUser, Content: "Execution result: \n1 of 3 tests failed.\n"}, true},
		{Message{Role: RoleUser, Content: "Execution result: \nAll 3 tests passed."}, false},
		{Message{Role: RoleUser, Content: "Execution result: \nTraceback (most recent call last):\n  x\nNameError: y"}, true},
		{Message{Role: RoleUser, Content: "Execution result: \nThe code does not compile (SyntaxError at line 1):"}, true},
		{Message{Role: RoleUser, Content: "Execution result: \n[1, 2, 3]"}, false},
		{Message{Role: RoleUser, Content: "Please make it faster; 2 of 3 tests failed."}, false},
		{Message{Role: RoleAssistant, Content: "Traceback (most recent call last)"}, false},
	} {
		if got := ShowsFailure(tc.m); got != tc.want {
			t.Errorf("ShowsFailure(%q) = %v, want %v", tc.m.Content, got, tc.want)
		}
	}
}

// TestToolCallCarriesAssistantCode: the execute_code call holds the
// assistant's code, whatever the record holds: a judge program stored by an
// older harness, or a lean record, with prose kept around the moved block.
func TestToolCallCarriesAssistantCode(t *testing.T) {
	text := "Here is a fix.\n\n```python\ndef f(x):\n    return x + 1\n```\n\nIt adds one."
	for _, tc := range []struct {
		name string
		exec *Execution
	}{
		{"lean record", &Execution{Language: "python", Code: "def f(x):\n    return x + 1"}},
		{"judge program", &Execution{Language: "python", Code: "# codefeedback test judge: see the judge source in _CF_SRC.\n_CF_SRC = '...'\n"}},
		{"no record", nil},
	} {
		d := Dialogue{ID: "d", Messages: []Message{{Role: RoleUser, Content: "q"}, {Role: RoleAssistant, Content: text}, {Role: RoleExecution, Content: "All 3 tests passed.", Exec: tc.exec}, {Role: RoleAssistant, Content: "Done."}}}
		r := ToOpenAI(&d, ExecAsTool)
		var args struct{ Language, Code string }
		json.Unmarshal([]byte(r.Messages[1].ToolCalls[0].Function.Arguments), &args)
		if args.Code != "def f(x):\n    return x + 1" || args.Language != "python" {
			t.Errorf("%s: call arguments %+v", tc.name, args)
		}
		if c := r.Messages[1].Content; c == nil || *c != "Here is a fix.\n\nIt adds one." {
			t.Errorf("%s: assistant text %v", tc.name, c)
		}
	}
}

// TestParquetSchemaGolden pins the Parquet schema of each layout
// (testdata/parquet_schema.golden; -update rewrites it).
func TestParquetSchemaGolden(t *testing.T) {
	dir := t.TempDir()
	d := sampleDialogue(1)
	num := d
	num.SourceID = json.RawMessage("42")
	var got strings.Builder
	for _, tc := range []struct {
		name string
		d    Dialogue
		o    ExportOptions
	}{
		{"codefeedback (string ids)", d, ExportOptions{}},
		{"codefeedback (integer ids)", num, ExportOptions{}},
		{"native", d, ExportOptions{To: ExportNative}},
	} {
		path := filepath.Join(dir, strings.Fields(tc.name)[0]+strconv.Itoa(len(got.String()))+".parquet")
		w, err := NewDialogueWriter(path, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&tc.d); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := parquetSchema(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&got, "== %s\n%s\n", tc.name, strings.TrimSpace(s))
	}
	golden := filepath.Join("testdata", "parquet_schema.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("Parquet schemas changed:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestCodeFeedbackExportLossless: the real sample -> import -> Parquet ->
// Code-Feedback JSONL gives records JSON-equal to the input (integer ids kept).
func TestCodeFeedbackExportLossless(t *testing.T) {
	src := sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
	dir := t.TempDir()
	ctx := context.Background()
	pq := filepath.Join(dir, "cf.parquet")
	back := filepath.Join(dir, "back.jsonl")
	if _, err := Export(ctx, src, pq, ExportOptions{To: ExportParquet}); err != nil {
		t.Fatal(err)
	}
	st, err := Export(ctx, pq, back, ExportOptions{To: ExportCodeFeedback})
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 10 {
		t.Errorf("wrote %d, want 10", st.Written)
	}
	orig := readOriginal(t, src)
	got := readOriginal(t, back)
	if !reflect.DeepEqual(orig, got) {
		t.Errorf("re-exported Code-Feedback records differ from the original")
	}
	// And the exact bytes of each id token.
	b, _ := os.ReadFile(back)
	if !strings.HasPrefix(string(b), `{"id":13461,`) {
		t.Errorf("first record starts %.30q, want an integer id", b)
	}
}
