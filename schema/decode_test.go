package schema

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// decodeCases are records on which the single typed decode must agree with
// the generic map-based one, including every case it hands over to it.
var decodeCases = []string{
	`{"id": 12, "messages": [{"role": "user", "content": "hi <b> & x"}, {"role": "assistant", "content": "ok"}]}`,
	`{"id":"a","messages":[{"role":"user","content":"x"}],"stage":"simulate","labels":{"k":"v"},"sources":["q1"]}`,
	`{"id": 1.50, "messages": [], "unknown": {"a": [1, 2]}, "other": "s"}`,
	`{"id": "a", "source_id": 7, "messages": [{"role":"user","content":"x"}]}`,
	`{"id": 7, "source_id": "orig", "messages": [{"role":"user","content":"x"}]}`,
	`{"id": 7, "source_id": [1, 2], "messages": []}`,
	`{"id": "a", "extra": {"k": 1}, "k": 2, "z": null}`,
	`{"id": "a", "extra": {"k": [1, 2], "h": "<x>"}, "j": 2}`,
	`{"id": "a", "extra": {"k": 1}, "extra": {"j": 2}}`,
	`{"id": "a", "labels": {"a": "1"}, "labels": {"b": "2"}}`,
	`{"id": "a", "u": 1, "u": 2}`,
	`{"ID": 5, "messages": []}`,
	`{"Messages": [{"role":"user","content":"x"}], "id": "a"}`,
	`{"mess\u0061ges": [{"role":"user","content":"x"}], "id": "a"}`,
	`{"id": null, "messages": []}`,
	`{"messages": []}`,
	`{"id": true, "messages": []}`,
	`{"id": {"x": 1}, "messages": []}`,
	`{"id": "a", "messages": "not a list"}`,
	`{"id": "a", "messages": [{"role": 1}]}`,
	`[1, 2]`,
	`"x"`,
	`null`,
	`{}`,
	`{"id": "a",}`,
	`{"id": "a"`,
	"{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\", \"feedback\": {\"category\": \"bugs\", \"body\": {\"a\": [1, 2], \"b\": \"<p>\"}}}]}",
	"{\"id\": \"a\", \"messages\": [{\"role\": \"execution\", \"content\": \"x\", \"exec\": {\"language\": \"python\", \"code\": \"1\", \"driver\": \"bwrap\", \"exit_code\": 1, \"duration_ns\": 5, \"executed_at\": \"2024-01-02T03:04:05Z\"}}]}",
	"{\"id\":\"a\",\"x\":\"\u2028\",\"messages\":[]}",
	" \n{ \"id\" : 3 ,\n \"messages\" : [ ] , \"k\" : { \"n\" : [ 1 ] } }\n",
	`{"id": "a", "k": "quote \" inside", "k2": "back\\", "k3": -1.5e3, "k4": false}`,
}

type decoded struct {
	D   Dialogue
	Err string
}

func decodeBoth(rec []byte) (fast, generic decoded) {
	d, err := decodeDialogue(rec)
	fast = decoded{D: d}
	if err != nil {
		fast = decoded{Err: err.Error()}
	}
	d, err = decodeDialogueGeneric(rec)
	generic = decoded{D: d}
	if err != nil {
		generic = decoded{Err: err.Error()}
	}
	return fast, generic
}

func TestDecodeDialogueMatchesGeneric(t *testing.T) {
	for _, c := range decodeCases {
		fast, generic := decodeBoth([]byte(c))
		if !reflect.DeepEqual(fast, generic) {
			t.Errorf("decodeDialogue(%s)\n got %+v\nwant %+v", c, fast, generic)
		}
	}
}

func TestDecodeDialogueKeepsIDsAndExtra(t *testing.T) {
	d, err := DecodeDialogue([]byte(`{"id": 42, "messages": [{"role": "user", "content": "x"}], "lang": "py"}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "42" || string(d.SourceID) != "42" || string(d.Extra["lang"]) != `"py"` {
		t.Errorf("got id %q source id %s extra %s, want 42, 42 and lang \"py\"", d.ID, d.SourceID, d.Extra)
	}
	if _, err := DecodeDialogue([]byte(`{"id": 42, "messages": []}`)); err == nil || err.Error() != "missing required field messages" {
		t.Errorf("got error %v, want missing required field messages", err)
	}
}

// The real Code-Feedback sample decodes identically both ways.
func TestDecodeDialogueSample(t *testing.T) {
	f, err := os.Open(sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		fast, generic := decodeBoth(sc.Bytes())
		if !reflect.DeepEqual(fast, generic) {
			t.Fatalf("record %d: decodeDialogue and the generic decode differ:\n%+v\n%+v", n+1, fast, generic)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no records in the sample")
	}
}

func FuzzDecodeDialogue(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		fast, generic := decodeBoth(rec)
		if !reflect.DeepEqual(fast, generic) {
			t.Fatalf("decodeDialogue(%q)\n got %+v\nwant %+v", rec, fast, generic)
		}
	})
}

// BenchmarkDecodeDialogue: records/s of decodeDialogue over the
// Code-Feedback sample, against the generic map-based decode in the same run.
func BenchmarkDecodeDialogue(b *testing.B) {
	f, err := os.Open(sharedtest.Path(b, "codefeedback-sample/code_feedback_sample.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var recs [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		recs = append(recs, append([]byte(nil), sc.Bytes()...))
	}
	for _, v := range []struct {
		name string
		fn   func(json.RawMessage) (Dialogue, error)
	}{{"typed", decodeDialogue}, {"generic-baseline", decodeDialogueGeneric}} {
		b.Run(v.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := v.fn(recs[i%len(recs)]); err != nil {
					b.Fatal(fmt.Errorf("record %d: %w", i%len(recs), err))
				}
			}
		})
	}
}
