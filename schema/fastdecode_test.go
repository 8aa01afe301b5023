package schema

import (
	"reflect"
	"testing"
)

// fastDecodeCases are records around the fast decoder's edges: what it
// takes must decode exactly as encoding/json does, what it refuses falls
// back.
var fastDecodeCases = []struct {
	rec  string
	fast bool // taken by the fast path
}{
	{`{"id":"a","messages":[{"role":"user","content":"hi"}]}`, true},
	{` { "id" : 7 , "messages" : [ { "content" : "x\ny" , "role" : "assistant" } ] } `, true},
	{`{"messages":[],"id":-0}`, true},
	{`{"id":"é\u00e9\ud83d\ude00","messages":[{"role":"user","content":"\"\\\/\b\f\n\r\t"}]}`, true},
	{`{"id":"x","messages":[{"role":"user","content":"lone \ud800 high, \udc00 low, \ud800\u0041 pair-less"}]}`, true},
	{`{"id":"x","messages":[{"role":"user"}]}`, true},
	{`{"id":"x","messages":[{"role":"user","content":"<&>\u2028"}]}`, true},
	{`{"id":12.5,"messages":[]}`, false},
	{`{"id":"x","messages":[{"role":"user","content":"a","exec":null}]}`, false},
	{`{"id":"x","ID":"y","messages":[]}`, false},
	{`{"id":"x","messages":[],"stage":"s"}`, false},
	{`{"id":"x","messages":[{"role":"user","role":"assistant","content":""}]}`, false},
	{`{"id":"x","messages":[{"role":"user","content":"bad \x"}]}`, false},
	{"{\"id\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", false},
	{"{\"id\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"a\tb\"}]}", false},
	{`{"id":"x","messages":[{"role":"user","content":"a"}]} x`, false},
	{`{"id":"x","messages":null}`, false},
	{`{"id":01,"messages":[]}`, false},
	{`{"id":"x"}`, false},
	{`{"m\u0065ssages":[],"id":"x"}`, false},
}

func TestFastDialogueMatchesEncodingJSON(t *testing.T) {
	for _, c := range fastDecodeCases {
		checkFastDialogue(t, []byte(c.rec), &c.fast)
	}
}

// checkFastDialogue compares the fast path with encoding/json's on rec;
// wantFast, when given, is whether the fast path must take rec.
func checkFastDialogue(t *testing.T, rec []byte, wantFast *bool) {
	t.Helper()
	fast, ok := fastDialogue(rec)
	if wantFast != nil && ok != *wantFast {
		t.Errorf("%s: fast path took it: %v, want %v", rec, ok, *wantFast)
	}
	if !ok {
		return
	}
	slow, err := decodeDialogueTyped(rec)
	if err != nil {
		t.Errorf("%s: fast path took a record encoding/json rejects: %v", rec, err)
		return
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%s:\nfast %#v\nslow %#v", rec, fast, slow)
	}
}

// FuzzFastDialogue: whatever the fast decoder accepts decodes exactly as
// through encoding/json.
func FuzzFastDialogue(f *testing.F) {
	for _, c := range fastDecodeCases {
		f.Add([]byte(c.rec))
	}
	f.Fuzz(func(t *testing.T, rec []byte) { checkFastDialogue(t, rec, nil) })
}

// plainRun stops at the first byte a JSON string cannot hold as it is,
// wherever it lies in the eight-byte words it reads.
func TestPlainRun(t *testing.T) {
	for c := 0; c < 256; c++ {
		special := c == '"' || c == '\\' || c < 0x20 || c >= 0x80
		for k := 0; k < 19; k++ {
			b := []byte("abcdefghijklmnopqrs")
			b[k] = byte(c)
			want := len(b)
			if special {
				want = k
			}
			if got := plainRun(b); got != want {
				t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
			}
		}
	}
}
