package pipeline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The fast envelope codec must agree with encoding/json on every input, the
// plain cases it handles itself and the rest it hands over.
func TestItemCodecMatchesEncodingJSON(t *testing.T) {
	items := []Item{
		{ID: "q1", Kind: "query", Data: json.RawMessage(`{"id":"q1","text":"hi"}`)},
		{ID: "q 2", Kind: "query", Data: json.RawMessage(`{"text":"a b"}`)},
		{ID: "q/3", Kind: "rating", Data: json.RawMessage(`[1,2,{"x":null}]`)},
		{ID: "<html>&", Kind: "query", Data: json.RawMessage(`{}`)},
		{ID: "é", Kind: "query", Data: json.RawMessage(`1`)},
		{ID: "tab\there", Kind: "query", Data: json.RawMessage(`"s"`)},
		{ID: `quote"back\`, Kind: "query", Data: json.RawMessage(`true`)},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{"t":"<b>&amp;</b>"}`)},
		{ID: "q", Kind: "query", Data: json.RawMessage("{\"t\":\"\u2028\"}")},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{ "spaced" : [ 1 , 2 ] }`)},
		{ID: "q", Kind: "query", Data: json.RawMessage("{\"multi\":\n1}")},
		{ID: "q", Kind: "query", Data: json.RawMessage(`null`)},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{"t":"a b\tc","u":"q\" x","v":"\\"}`)},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{"t":"a" }`)},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{"t":"\\" ,"u":1}`)},
		{ID: "q", Kind: "query", Data: json.RawMessage(`{"t":"unterminated}`)},
		{ID: "q", Kind: "query", Data: json.RawMessage("{\"t\":\"\u2027 ok\"}")},
		{ID: "q", Kind: "query"},
		{ID: "", Kind: "", Data: json.RawMessage(`"ü"`)},
	}
	for _, it := range items {
		want, werr := json.Marshal(it)
		got, gerr := appendItem([]byte("prefix"), it)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("appendItem(%+v) error %v, json.Marshal error %v", it, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Errorf("appendItem(%+v) = %s, want %s", it, got[len("prefix"):], want)
		}
	}
	lines := []string{
		`{"id":"q1","kind":"query","data":{"id":"q1","text":"hi"}}`,
		`{"id":"q1","kind":"query","data":null}`,
		`{"id":"q1","kind":"query","data":"x"}`,
		`{"id":"q\u00e9","kind":"query","data":1}`,
		`{"id":"é","kind":"query","data":1}`,
		`{"id":"q1","kind":"query","data":{"a":1},"extra":{"b":2}}`,
		`{"id":"q1","kind":"query","data":{"a":1}, "x":1}`,
		`{"kind":"query","id":"q1","data":[1]}`,
		`{"id":"q1","kind":"query","data":{"a":1} }`,
		`{"id":"q1","kind":"query","data":}`,
		`{"id":"q1","kind":"query","data":{"a":}`,
		`{"id":"q1","kind":"query"}`,
		`{"id":"q1","kind":"query","data":{"a":1}}}`,
		"{\"id\":\"a\xffb\",\"kind\":\"query\",\"data\":1}",
		`{"id":"q1","kind":"query","data":[1,2]`,
	}
	for _, l := range lines {
		var want Item
		werr := json.Unmarshal([]byte(l), &want)
		got, gerr := parseItem([]byte(l))
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("parseItem(%s) error %v, json.Unmarshal error %v", l, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("parseItem(%s) = %+v, want %+v", l, got, want)
		}
	}
}

func FuzzAppendItem(f *testing.F) {
	f.Add("q1", "query", []byte(`{"id":"q1","text":"hi there"}`))
	f.Add("q<1>", "query", []byte(`{"t":"a\" b", "u":[1, 2]}`))
	f.Fuzz(func(t *testing.T, id, kind string, data []byte) {
		it := Item{ID: id, Kind: kind, Data: data}
		want, werr := json.Marshal(it)
		got, gerr := appendItem(nil, it)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("appendItem(%+v) error %v, json.Marshal error %v", it, gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendItem(%+v) = %s, want %s", it, got, want)
		}
	})
}

func FuzzParseItem(f *testing.F) {
	f.Add([]byte(`{"id":"q1","kind":"query","data":{"id":"q1","text":"hi"}}`))
	f.Add([]byte(`{"id":"q1","kind":"query","data":{"a":1},"x":2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var want Item
		werr := json.Unmarshal(line, &want)
		got, gerr := parseItem(bytes.Clone(line))
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("parseItem(%q) error %v, json.Unmarshal error %v", line, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseItem(%q) = %+v, want %+v", line, got, want)
		}
	})
}
