package pipeline

import (
	"github.com/codefeedback/codefeedback/schema"

	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The engine writes and reads every item envelope several times per stage
// (stage input, cached value, output file, Observe). encoding/json spends
// most of that on reflection and copies; these two functions handle the
// common case directly and fall back to encoding/json for anything else, so
// the bytes on disk and the decoded items are exactly what encoding/json
// would produce.

// appendItem appends it's JSON encoding, byte for byte what json.Marshal(it)
// returns.
func appendItem(dst []byte, it Item) ([]byte, error) {
	if !plainString(it.ID) || !plainString(it.Kind) || !plainData(it.Data) {
		b, err := json.Marshal(it)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	dst = append(dst, `{"id":"`...)
	dst = append(dst, it.ID...)
	dst = append(dst, `","kind":"`...)
	dst = append(dst, it.Kind...)
	dst = append(dst, `","data":`...)
	dst = append(dst, it.Data...)
	return append(dst, '}'), nil
}

// plainString reports whether json.Marshal(s) is s in quotes: printable
// ASCII without quote, backslash or the HTML characters it escapes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// plainData reports whether json.Marshal copies raw unchanged: it is valid
// JSON with nothing for its compaction and HTML escaping to change (no
// whitespace outside strings, no <, > or &, no U+2028 or U+2029).
func plainData(raw json.RawMessage) bool {
	return len(raw) > 0 && schema.IsCompactJSON(raw) && json.Valid(raw)
}

// parseItem decodes one envelope line as json.Unmarshal would. The result's
// Data may alias line, so the caller must own line and not modify it later.
func parseItem(line []byte) (Item, error) {
	if it, ok := parseItemFast(line); ok {
		return it, nil
	}
	var it Item
	err := json.Unmarshal(line, &it)
	return it, err
}

// parseItemFast handles the layout appendItem writes with plain id and kind:
// {"id":"ID","kind":"KIND","data":DATA}.
func parseItemFast(line []byte) (Item, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"id":"`))
	if !ok {
		return Item{}, false
	}
	id, rest, ok := plainPrefix(rest)
	if !ok {
		return Item{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"kind":"`)); !ok {
		return Item{}, false
	}
	kind, rest, ok := plainPrefix(rest)
	if !ok {
		return Item{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"data":`)); !ok {
		return Item{}, false
	}
	data, ok := bytes.CutSuffix(rest, []byte{'}'})
	// Validating data also rejects lines with more keys after "data", which
	// would otherwise end up inside it.
	if !ok || len(data) == 0 || data[0] == ' ' || data[len(data)-1] == ' ' || !json.Valid(data) {
		return Item{}, false
	}
	return Item{ID: string(id), Kind: string(kind), Data: data}, true
}

// plainPrefix splits a JSON string body (after its opening quote) that has
// no escapes and only printable ASCII, returning it and what follows its
// closing quote.
func plainPrefix(b []byte) (s, rest []byte, ok bool) {
	for i, c := range b {
		switch {
		case c == '"':
			return b[:i], b[i+1:], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, nil, false
		}
	}
	return nil, nil, false
}
