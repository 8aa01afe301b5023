package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeDialogue decodes one Code-Feedback-style record or dialogue of this
// tool, as Source.Next does for a dialogue file, and validates it. It is
// safe for concurrent use, so readers can decode records in parallel
// (the audit does). rec is not retained.
func DecodeDialogue(rec json.RawMessage) (Dialogue, error) {
	d, err := decodeDialogue(rec)
	if err != nil {
		return Dialogue{}, err
	}
	if err := d.Validate(); err != nil {
		return Dialogue{}, err
	}
	return d, nil
}

// dialogueWire decodes a dialogue record in one typed pass: the embedded
// Dialogue takes the known fields, and the outer ID, being shallower, takes
// "id" instead of Dialogue.ID, in whatever JSON type the file used
// (Code-Feedback's ids are integers).
type dialogueWire struct {
	ID json.RawMessage `json:"id"`
	*Dialogue
}

// decodeDialogue reads a Code-Feedback record or one of this tool's own
// dialogues. An id that is not a JSON string (Code-Feedback uses integers)
// becomes the string ID and is kept verbatim in SourceID; unknown top-level
// fields go to Extra.
func decodeDialogue(rec json.RawMessage) (Dialogue, error) {
	if d, ok := fastDialogue(rec); ok {
		return d, nil
	}
	return decodeDialogueTyped(rec)
}

// decodeDialogueTyped is decodeDialogue through encoding/json.
func decodeDialogueTyped(rec json.RawMessage) (Dialogue, error) {
	var d Dialogue
	w := dialogueWire{Dialogue: &d}
	if err := json.Unmarshal(rec, &w); err != nil {
		return decodeDialogueGeneric(rec) // the same error, worded as before
	}
	unknown, ok := scanDialogueKeys(rec)
	if !ok {
		return decodeDialogueGeneric(rec)
	}
	for i := range d.Messages {
		// The generic path re-encodes every value once (compaction, HTML
		// escaping); raw bodies keep that form.
		if f := d.Messages[i].Feedback; f != nil && f.Body != nil && !IsCompactJSON(f.Body) {
			b, err := json.Marshal(f.Body)
			if err != nil {
				return decodeDialogueGeneric(rec)
			}
			f.Body = b
		}
	}
	if len(w.ID) > 0 && !isNull(w.ID) {
		id, err := scalarString(w.ID)
		if err != nil {
			return d, fmt.Errorf("field \"id\": %v", err)
		}
		d.ID = id
		if w.ID[0] != '"' && d.SourceID == nil {
			d.SourceID = w.ID
		}
	}
	if len(unknown) > 0 {
		if d.Extra == nil {
			d.Extra = make(map[string]json.RawMessage, len(unknown)/2)
		}
		for i := 0; i < len(unknown); i += 2 {
			d.Extra[string(unknown[i])] = bytes.Clone(unknown[i+1])
		}
	}
	return d, nil
}

// scanDialogueKeys walks the top-level members of a valid JSON object and
// returns the unknown ones as key, value pairs (slices of rec). ok is false
// when the typed decode might not match decodeDialogueGeneric: a key given
// twice, a key with escapes, an unknown key equal to a field name but for
// case (encoding/json matches names case-insensitively), or a source_id or
// extra value that the generic path's re-encoding would rewrite (whitespace,
// HTML characters).
func scanDialogueKeys(rec []byte) (unknown [][]byte, ok bool) {
	i := skipSpace(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return nil, false
	}
	i = skipSpace(rec, i+1)
	if i < len(rec) && rec[i] == '}' {
		return nil, true
	}
	var seen uint32
	var unknownKeys []string
	for i < len(rec) {
		if rec[i] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(rec[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		key := rec[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return nil, false
		}
		i = skipSpace(rec, i+2+end)
		if i >= len(rec) || rec[i] != ':' {
			return nil, false
		}
		i = skipSpace(rec, i+1)
		vend := skipValue(rec, i)
		if vend <= i {
			return nil, false
		}
		val := rec[i:vend]
		if f := dialogueFieldIndex(key); f >= 0 {
			if seen&(1<<f) != 0 {
				return nil, false
			}
			seen |= 1 << f
			if (dialogueFields[f] == "extra" || dialogueFields[f] == "source_id") && !IsCompactJSON(val) {
				return nil, false
			}
		} else {
			for _, k := range dialogueFields {
				if strings.EqualFold(k, string(key)) {
					return nil, false
				}
			}
			for _, k := range unknownKeys {
				if k == string(key) {
					return nil, false
				}
			}
			unknownKeys = append(unknownKeys, string(key))
			unknown = append(unknown, key, val)
		}
		i = skipSpace(rec, vend)
		if i >= len(rec) {
			return nil, false
		}
		switch rec[i] {
		case ',':
			i = skipSpace(rec, i+1)
		case '}':
			return unknown, true
		default:
			return nil, false
		}
	}
	return nil, false
}

func dialogueFieldIndex(key []byte) int {
	for i, k := range dialogueFields {
		if k == string(key) {
			return i
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i], which the
// caller knows to be valid JSON.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			// Jump from quote to quote (vectorised); a quote after an odd
			// run of backslashes is escaped.
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return len(b)
				}
				j += k
				n := 0
				for p := j - 1; p > i && b[p] == '\\'; p-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j + 1
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i <= len(b) && (i == len(b) || b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return min(i, len(b))
		}
	}
	return i
}

// IsCompactJSON reports whether re-encoding the valid JSON value b
// (compaction with HTML escaping, as json.Marshal does) leaves it unchanged:
// no whitespace outside strings, no <, > or &, no U+2028 or U+2029.
func IsCompactJSON(b []byte) bool {
	inString, escaped := false, false
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
