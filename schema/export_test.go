package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/shared"
	"github.com/parquet-go/parquet-go"
)

func sampleDialogue(i int) Dialogue {
	pass := i%2 == 0
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a coding assistant."},
		{Role: RoleUser, Content: fmt.Sprintf("Write a function that returns %d.", i)},
		{Role: RoleAssistant, Content: fmt.Sprintf("```python\ndef f():\n    return %d\nprint(f())\n```", i)},
		{Role: RoleExecution, Content: fmt.Sprintf("%d\n", i), Exec: &Execution{Language: "python", Code: fmt.Sprintf("def f():\n    return %d\nprint(f())", i), Driver: "bwrap", ExitCode: 0, Stdout: fmt.Sprintf("%d\n", i), Passed: &pass, Duration: 1234}},
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

// TestExportFormats checks each export's rendering of an execution turn.
func TestExportFormats(t *testing.T) {
	d := sampleDialogue(7)
	cf := ToCodeFeedback(&d)
	if cf.Messages[3].Role != "user" || cf.Messages[3].Content != "Execution result: \n7\n" {
		t.Errorf("codefeedback execution turn: got %+v", cf.Messages[3])
	}
	if string(cf.ID) != `"`+d.ID+`"` {
		t.Errorf("codefeedback id: got %s want quoted %s", cf.ID, d.ID)
	}
	sg := ToShareGPT(&d, ExecAsUser)
	wantFrom := []string{"system", "human", "gpt", "human", "human", "gpt"}
	for i, tr := range sg.Conversations {
		if tr.From != wantFrom[i] {
			t.Errorf("sharegpt turn %d: got from %q want %q", i, tr.From, wantFrom[i])
		}
	}
	if got := ToShareGPT(&d, ExecAsTool).Conversations[3].From; got != "observation" {
		t.Errorf("sharegpt tool: got %q want observation", got)
	}
	oa := ToOpenAI(&d, ExecAsTool)
	if oa.Messages[3].Role != "tool" || oa.Messages[3].ToolCallID == "" || len(oa.Messages[2].ToolCalls) != 1 || oa.Messages[2].ToolCalls[0].ID != oa.Messages[3].ToolCallID {
		t.Errorf("openai tool rendering: got %+v / %+v", oa.Messages[2], oa.Messages[3])
	}
	var args map[string]string
	json.Unmarshal([]byte(oa.Messages[2].ToolCalls[0].Function.Arguments), &args)
	if args["code"] != d.Messages[3].Exec.Code {
		t.Errorf("tool call arguments: got %v", args)
	}
	if ou := ToOpenAI(&d, ExecAsUser); ou.Messages[3].Role != "user" || !strings.HasPrefix(*ou.Messages[3].Content, ExecutionPrefix) {
		t.Errorf("openai user rendering: got %+v", ou.Messages[3])
	}
}

// TestCodeFeedbackExportLossless: the real sample -> import -> Parquet ->
// Code-Feedback JSONL gives records JSON-equal to the input (integer ids kept).
func TestCodeFeedbackExportLossless(t *testing.T) {
	src := shared.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
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
