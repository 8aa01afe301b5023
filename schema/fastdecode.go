package schema

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/codefeedback/codefeedback/internal/strlit"
)

// fastDialogue decodes the plain Code-Feedback layout, {"id": <string or
// integer>, "messages": [{"role": "...", "content": "..."}, ...]}, without
// reflection: most of an export or an import of such a file is JSON decoding,
// and encoding/json spends it on validation, reflection and allocation. It
// returns ok=false for anything else (another key, a null, an escaped key,
// invalid JSON or UTF-8), and the caller decodes that record with
// decodeDialogue; when ok, the result is exactly decodeDialogue's (the
// differential tests and the fuzz target hold it to that).
func fastDialogue(rec []byte) (d Dialogue, ok bool) {
	p := jsonParser{b: rec}
	if !p.byte('{') {
		return d, false
	}
	var haveID, haveMsgs bool
	if !p.fields(func(key string) bool {
		switch key {
		case "id":
			if haveID {
				return false
			}
			haveID = true
			p.space()
			if p.i < len(p.b) && p.b[p.i] == '"' {
				s, ok := p.str()
				d.ID = s
				return ok
			}
			n, ok := p.integer()
			d.ID = string(n)
			d.SourceID = json.RawMessage(d.ID)
			return ok
		case "messages":
			if haveMsgs {
				return false
			}
			haveMsgs = true
			var ok bool
			d.Messages, ok = p.messages()
			return ok
		}
		return false
	}) {
		return d, false
	}
	p.space()
	return d, p.i == len(p.b) && haveMsgs
}

type jsonParser struct {
	b []byte
	i int
}

// fields reads an object's members, its opening brace already read:
// field reads the value of each (p past the key's colon) and returns false
// to reject the record, as fields then does; so does a malformed object.
func (p *jsonParser) fields(field func(key string) bool) bool {
	for {
		key, ok := p.key()
		if !ok || !field(key) {
			return false
		}
		more, ok := p.more('}')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after optional space.
func (p *jsonParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// more reads what follows an element of an object or array: a comma
// (more is true) or the closing byte (more is false); ok is false on
// anything else or at the end of input.
func (p *jsonParser) more(closing byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	c := p.b[p.i]
	p.i++
	switch c {
	case ',':
		return true, true
	case closing:
		return false, true
	}
	return false, false
}

// key reads `"name":` where name is plain ASCII without escapes.
func (p *jsonParser) key() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			k := p.b[start:p.i]
			p.i++
			if !p.byte(':') {
				return "", false
			}
			return string(k), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return "", false
		}
		p.i++
	}
	return "", false
}

// integer reads a JSON integer (no fraction or exponent).
func (p *jsonParser) integer() ([]byte, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || (n > 1 && p.b[digits] == '0') {
		return nil, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

// messages reads [{"role": "...", "content": "..."}, ...] with exactly those
// two keys in each element.
func (p *jsonParser) messages() ([]Message, bool) {
	if !p.byte('[') {
		return nil, false
	}
	msgs := make([]Message, 0, 8)
	if p.byte(']') {
		return msgs, true
	}
	for {
		if !p.byte('{') {
			return nil, false
		}
		var m Message
		var haveRole, haveContent bool
		if !p.fields(func(key string) bool {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return false
			}
			s, ok := p.str()
			switch {
			case !ok:
				return false
			case key == "role" && !haveRole:
				m.Role, haveRole = s, true
			case key == "content" && !haveContent:
				m.Content, haveContent = s, true
			default:
				return false
			}
			return true
		}) {
			return nil, false
		}
		msgs = append(msgs, m)
		more, ok := p.more(']')
		if !ok {
			return nil, false
		}
		if !more {
			return msgs, true
		}
	}
}

// str reads a JSON string at p.i (an opening quote) as encoding/json decodes
// it. Invalid UTF-8 (which encoding/json would replace) and invalid escapes
// return ok=false.
func (p *jsonParser) str() (string, bool) {
	p.i++ // opening quote
	start := p.i
	// Plain run: printable ASCII and valid UTF-8 without escapes.
	for p.i < len(p.b) {
		if p.i += plainRun(p.b[p.i:]); p.i == len(p.b) {
			break
		}
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		r, size := utf8.DecodeRune(p.b[p.i:])
		if r == utf8.RuneError && size == 1 {
			return "", false
		}
		p.i += size
	}
	// Unescaping never lengthens the text: size the buffer once for the
	// string's escaped length (a Builder neither zeroes it nor copies it
	// into the string).
	end := p.i
	for end < len(p.b) {
		if end += plainRun(p.b[end:]); end >= len(p.b) || p.b[end] == '"' {
			break
		}
		if p.b[end] == '\\' {
			end++
		}
		end++
	}
	var out strings.Builder
	out.Grow(min(end, len(p.b)) - start)
	out.Write(p.b[start:p.i])
	for p.i < len(p.b) {
		if n := plainRun(p.b[p.i:]); n > 0 {
			out.Write(p.b[p.i : p.i+n])
			if p.i += n; p.i == len(p.b) {
				break
			}
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return out.String(), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", false
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out.WriteByte(e)
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r, ok := strlit.Hex4(p.b, p.i)
				if !ok {
					return "", false
				}
				p.i += 4
				if utf16.IsSurrogate(r) {
					// As encoding/json: a valid pair is one rune, anything
					// else is U+FFFD (and the next escape is read on its own).
					r2 := rune(-1)
					if p.i+6 <= len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						if v, ok := strlit.Hex4(p.b, p.i+2); ok {
							r2 = v
						}
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						p.i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out.WriteRune(r)
			default:
				return "", false
			}
		default: // not ASCII: plainRun stops at nothing else
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			out.Write(p.b[p.i : p.i+size])
			p.i += size
		}
	}
	return "", false
}

// plainRun returns how many bytes at the start of b a JSON string holds
// as they are (printable ASCII but '"' and '\\'), reading eight bytes at a
// time: most of a record is such runs, between escaped newlines.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if notPlain(binary.LittleEndian.Uint64(b[i:])) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	return i
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// notPlain is non-zero when a byte of v is '"', '\\', a control character
// or not ASCII (the zero-byte and less-than tests of "Bit Twiddling Hacks":
// exact about whether such a byte exists, not about which).
func notPlain(v uint64) uint64 {
	q, s := v^(ones*'"'), v^(ones*'\\')
	return ((q-ones)&^q | (s-ones)&^s | (v-ones*0x20)&^v | v) & highs
}
