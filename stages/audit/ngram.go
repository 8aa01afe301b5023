package audit

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultN is the n-gram length of the overlap measure (13, as in common
// decontamination practice since GPT-3).
const DefaultN = 13

// span is one word token of a text: bytes [start, end), and its hash.
type span struct {
	start, end int32
	hash       uint64
}

// tokenize splits text into word tokens: maximal runs of letters, digits and
// '_', lowercased. Everything else (space, punctuation, operators) separates
// tokens and is dropped, so "sum(a,b)" and "sum (a, b)" give the same tokens.
// It appends to buf and returns it, so a caller can reuse the buffer.
func tokenize(text string, buf []span) []span {
	buf = buf[:0]
	i := 0
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			if !asciiWord[c] {
				i++
				continue
			}
		} else if r, _ := utf8.DecodeRuneInString(text[i:]); !isWord(r) {
			_, sz := utf8.DecodeRuneInString(text[i:])
			i += sz
			continue
		}
		start := i
		h := uint64(fnvOffset)
		for i < len(text) {
			c := text[i]
			if c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				h = (h ^ uint64(c)) * fnvPrime
				i++
				continue
			}
			r, sz := utf8.DecodeRuneInString(text[i:])
			if !isWord(r) {
				break
			}
			r = unicode.ToLower(r)
			var enc [4]byte
			n := utf8.EncodeRune(enc[:], r)
			for _, b := range enc[:n] {
				h = (h ^ uint64(b)) * fnvPrime
			}
			i += sz
		}
		buf = append(buf, span{start: int32(start), end: int32(i), hash: mix(h)})
	}
	return buf
}

var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	// rollBase is the odd multiplier of the polynomial n-gram hash.
	rollBase = 0x9E3779B97F4A7C15
)

// mix is the splitmix64 finaliser: it spreads FNV's low-entropy bits so the
// polynomial combination of token hashes behaves like a random hash.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rollingHashes appends the hash of every n-long window of hs to out (none
// when hs is shorter than n) with a rolling polynomial hash mod 2^64:
// H = sum hs[i+k]*B^(n-1-k). It serves both token n-grams and line windows.
func rollingHashes(hs []uint64, n int, out []uint64) []uint64 {
	if n <= 0 || len(hs) < n {
		return out
	}
	var top uint64 = 1 // B^(n-1)
	for k := 1; k < n; k++ {
		top *= rollBase
	}
	var h uint64
	for k := 0; k < n; k++ {
		h = h*rollBase + hs[k]
	}
	out = append(out, h)
	for i := n; i < len(hs); i++ {
		h = (h-hs[i-n]*top)*rollBase + hs[i]
		out = append(out, h)
	}
	return out
}

// hashString is FNV-1a 64 with the splitmix finaliser.
func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return mix(h)
}

// ngramText renders the n tokens starting at toks[i] as lowercased words
// separated by one space, for evidence.
func ngramText(text string, toks []span, i, n int) string {
	var b strings.Builder
	for k := i; k < i+n && k < len(toks); k++ {
		if k > i {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ToLower(text[toks[k].start:toks[k].end]))
	}
	return b.String()
}

// Tokens returns the word tokens of text as the n-gram measure sees them.
func Tokens(text string) []string {
	toks := tokenize(text, nil)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strings.ToLower(text[t.start:t.end])
	}
	return out
}
