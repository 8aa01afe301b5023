package schema

import "strings"

// fence is one fenced code block of a message: its info-string language
// (lower case, "" when none), its code, and the byte span of the whole block
// (opening line to closing line, inclusive of the closing newline) in the text.
type fence struct {
	Lang       string
	Code       string
	Start, End int
	Closed     bool
}

// fences scans text for ``` blocks line by line. It is a plain byte scan
// because it runs on every message of every record (inspect, exports): a
// regular expression over whole messages cost most of inspect's CPU.
func fences(text string) []fence {
	var out []fence
	var cur *fence
	codeStart := 0
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(text)
		}
		line := text[pos:end]
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				out = append(out, fence{Lang: strings.ToLower(fenceLang(line[3:])), Start: pos})
				cur = &out[len(out)-1]
				codeStart = next
			} else if strings.TrimSpace(line[3:]) == "" {
				cur.Code = strings.TrimSuffix(text[codeStart:pos], "\n")
				cur.End, cur.Closed = next, true
				cur = nil
			}
		}
		pos = next
	}
	if cur != nil {
		cur.Code, cur.End = text[min(codeStart, len(text)):], len(text)
	}
	return out
}

// fenceLang is the language word of a fence's info string: the leading run
// of letters, digits and _+#- characters.
func fenceLang(info string) string {
	n := 0
	for n < len(info) {
		c := info[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '#' || c == '-' {
			n++
			continue
		}
		break
	}
	return info[:n]
}

// FenceLanguages calls f with the language of every fenced block of text
// that names one, in order; it allocates nothing. It looks for the fences
// themselves rather than at every line: inspect runs it on every message.
func FenceLanguages(text string, f func(lang string)) {
	for pos := 0; pos < len(text); {
		i := strings.Index(text[pos:], "```")
		if i < 0 {
			return
		}
		i += pos
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += i
		}
		if (i == 0 || text[i-1] == '\n') && end-i > 3 {
			if l := fenceLang(text[i+3 : end]); l != "" {
				f(l)
			}
		}
		pos = end + 1 // nothing else on this line starts a fence
	}
}
