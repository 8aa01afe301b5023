package leak

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
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
// It reuses buf's storage.
func tokenize(text string, buf []span) []span { return appendTokens(buf[:0], text) }

// appendTokens appends the tokens of text (offsets relative to text) to buf.
// An ASCII word (nearly every word) is found and hashed eight bytes at a
// time (wordMask, wordHash); a word with other characters is
// lowercased into a buffer first.
func appendTokens(buf []span, text string) []span { return appendTokensIn(buf, text, 0, len(text)) }

// appendTokensIn appends the tokens of text[from:to] (offsets relative to
// text) to buf. No word may run across the bounds: the bytes on at least
// one side of each are ASCII and not word bytes.
func appendTokensIn(buf []span, text string, from, to int) []span {
	var low []byte
	n := to
	i := from
	for i < n {
		// Separators are skipped eight bytes at a time, to a word byte
		// or a non-ASCII byte.
		for i+8 <= n {
			v := load64(text, i)
			if m := wordMask(v) | v&hi8; m != 0 {
				i += firstByte(m)
				break
			}
			i += 8
		}
		if i >= n {
			break
		}
		c := text[i]
		if !wordByte[c] {
			if c < utf8.RuneSelf {
				i++
				continue
			}
			if r, sz := utf8.DecodeRuneInString(text[i:]); !isWord(r) {
				i += sz
				continue
			}
		}
		start := i
		// The word's ASCII bytes, eight at a time. v0 keeps the first
		// eight when the word ends inside them, as most do.
		var v0 uint64
		short := false
		for {
			if i+8 > n {
				for i < n && wordByte[text[i]] {
					i++
				}
				break
			}
			v := load64(text, i)
			if m := ^wordMask(v) & hi8; m != 0 {
				v0, short = v, i == start
				i += firstByte(m)
				break
			}
			i += 8
		}
		if i == n || text[i] < utf8.RuneSelf {
			var h uint64
			if k := i - start; short && k > 0 {
				h = shortWordHash(v0, k)
			} else {
				h = wordHash(text, start, i)
			}
			buf = append(buf, span{start: int32(start), end: int32(i), hash: h})
			continue
		}
		ascii := true
		for i < n {
			c := text[i]
			if c >= utf8.RuneSelf {
				r, sz := utf8.DecodeRuneInString(text[i:])
				if !isWord(r) {
					break
				}
				ascii = false
				i += sz
				continue
			}
			if !asciiWord[c] {
				break
			}
			i++
		}
		if ascii { // an ASCII word followed by a non-ASCII separator
			buf = append(buf, span{start: int32(start), end: int32(i), hash: wordHash(text, start, i)})
			continue
		}
		var h uint64
		low, h = unicodeWordHash(low, text[start:i])
		buf = append(buf, span{start: int32(start), end: int32(i), hash: h})
	}
	return buf
}

// unicodeWordHash hashes a word token with a non-ASCII letter: its
// lowercase form (in low, a reusable buffer), never equal to an ASCII
// word's hash.
func unicodeWordHash(low []byte, w string) ([]byte, uint64) {
	low = appendLower(low[:0], w)
	h := tokSeed
	for _, c := range low {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return low, fmix64(h)
}

// wordHash hashes the ASCII word text[start:end] lowercased, eight bytes
// a step: setting bit 5 of every byte lowercases the letters, leaves the
// digits alone and maps '_' to DEL, no word byte, so it is one-to-one on
// words. The word bytes are read as little-endian words of text.
func wordHash(text string, start, end int) uint64 {
	const lower = lowerBits
	h := tokSeed ^ uint64(end-start)*fnvPrime
	p := start
	for ; end-p >= 8; p += 8 {
		v := load64(text, p) | lower
		h = bits.RotateLeft64((h^v)*wordMul, 29)
	}
	if n := end - p; n > 0 {
		var v uint64
		if p+8 <= len(text) {
			v = load64(text, p)
		} else {
			for k := n - 1; k >= 0; k-- {
				v = v<<8 | uint64(text[p+k])
			}
		}
		mask := uint64(1)<<(8*n) - 1
		h = bits.RotateLeft64((h^(v|lower)&mask)*wordMul, 29)
	}
	return fmix64(h)
}

// shortWordHash is wordHash of a word of k < 8 bytes whose bytes (and
// what follows them) v holds, read as load64 reads them: wordHash's last
// step on the bytes already read.
func shortWordHash(v uint64, k int) uint64 {
	return fmix64(bits.RotateLeft64((tokSeed^uint64(k)*fnvPrime^(v|lowerBits)&(1<<(8*k)-1))*wordMul, 29))
}

// lowerBits sets bit 5 of every byte: wordHash's lowercasing.
const lowerBits = 0x2020202020202020

// wordMul is the multiplier of wordHash's steps (odd, from murmur3).
const wordMul = 0x87c37b91114253d5

// load64 reads text[p:p+8] as a little-endian word.
func load64(text string, p int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(text[p:p+8]), 8))
}

// fnvPrime is FNV-1a's 64-bit prime; tokSeed, its offset basis for this
// process, keyed like every other hash of the audit.
const fnvPrime = 1099511628211

var tokSeed = maphash.String(seed, "word tokens") | 1

// appendLower appends the lowercase form of a word token to b.
func appendLower(b []byte, w string) []byte {
	for _, r := range w {
		if r < utf8.RuneSelf {
			c := byte(r)
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			continue
		}
		b = utf8.AppendRune(b, unicode.ToLower(r))
	}
	return b
}

// wordByte marks the ASCII word bytes among all 256, so the scan needs
// no separate ASCII test.
var wordByte = func() (t [256]bool) {
	copy(t[:], asciiWord[:])
	return t
}()

var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// rollBase is the odd multiplier of the polynomial n-gram hash.
const rollBase = 0x9E3779B97F4A7C15

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

// seed keys the hashes of one process. Indexes and dialogues are hashed in
// the same process, so a random seed is enough and defeats crafted
// collisions.
var seed = maphash.MakeSeed()

// hashString hashes a token or a normalised line.
func hashString(s string) uint64 { return maphash.String(seed, s) }

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
