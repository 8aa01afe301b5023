package leak

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// lexIndex retrieves the benchmark statements nearest to a dialogue turn
// for the paraphrase judge when no embedding endpoint is configured. It is
// BM25 over word terms that are stemmed and mapped through a small table
// of the synonyms task statements use ("drop"/"delete" -> remove, "ints" ->
// integer, "exclusive or" -> xor), plus character 4-grams of each word at a
// lower weight, so "occurrences" still meets "occur" and "ints" meets
// "integers" when the table has no entry. Measured on the planted
// rewordings (TestParaphraseRetrieval), the dense hashed TF-IDF put the true
// task outside the 5 candidates for 2 of 8; this puts every one in the top
// 3 of 1,138 statements.
type lexIndex struct {
	post   map[uint64][]lexPost
	idf    map[uint64]float32
	docLen []float32
	avgLen float32
	self   []float32 // each statement's score against itself
	docs   []lexDoc
}

type lexDoc struct{ bench, task int32 }

type lexPost struct {
	doc int32
	tf  float32
}

// lexTerm is one weighted term of a text.
type lexTerm struct {
	h uint64
	w float32
}

// BM25 parameters (the usual ones) and the weight of a character 4-gram
// relative to a whole word.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	charGramW  = 0.2
	charGramsN = 4
)

// newLexIndex indexes the statements of every benchmark (per benchmark, per
// task).
func newLexIndex(statements [][]string) *lexIndex {
	ix := &lexIndex{post: map[uint64][]lexPost{}, idf: map[uint64]float32{}}
	var terms []lexTerm
	for bi, ss := range statements {
		for ti, s := range ss {
			doc := int32(len(ix.docs))
			ix.docs = append(ix.docs, lexDoc{int32(bi), int32(ti)})
			terms = lexTerms(s, terms[:0])
			var n float32
			for _, t := range merge(terms) {
				ix.post[t.h] = append(ix.post[t.h], lexPost{doc: doc, tf: t.w})
				n += t.w
			}
			ix.docLen = append(ix.docLen, n)
			ix.avgLen += n
		}
	}
	if len(ix.docs) > 0 {
		ix.avgLen /= float32(len(ix.docs))
	}
	N := float64(len(ix.docs))
	for h, ps := range ix.post {
		df := float64(len(ps))
		ix.idf[h] = float32(math.Log(1 + (N-df+0.5)/(df+0.5)))
	}
	acc := make([]float32, len(ix.docs))
	ix.self = make([]float32, len(ix.docs))
	for bi, ss := range statements {
		for ti, s := range ss {
			doc := ix.docOf(bi, ti)
			ix.scores(lexTerms(s, terms[:0]), acc)
			ix.self[doc] = acc[doc]
		}
	}
	return ix
}

func (ix *lexIndex) docOf(bench, task int) int {
	for i, d := range ix.docs {
		if int(d.bench) == bench && int(d.task) == task {
			return i
		}
	}
	return -1
}

// merge sums the weights of equal terms (sorting terms by hash).
func merge(ts []lexTerm) []lexTerm {
	sort.Slice(ts, func(i, j int) bool { return ts[i].h < ts[j].h })
	out := ts[:0]
	for _, t := range ts {
		if k := len(out); k > 0 && out[k-1].h == t.h {
			out[k-1].w += t.w
			continue
		}
		out = append(out, t)
	}
	return out
}

// scores sets acc[doc] to the BM25 score of the query terms against every
// statement. A query term counts once, with its summed weight capped at 1
// (a turn that repeats a word is not more like a statement using it).
func (ix *lexIndex) scores(q []lexTerm, acc []float32) {
	clear(acc)
	for _, t := range merge(q) {
		ps := ix.post[t.h]
		if len(ps) == 0 {
			continue
		}
		qw := min(t.w, 1) * ix.idf[t.h]
		for _, p := range ps {
			tf := p.tf
			acc[p.doc] += qw * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*ix.docLen[p.doc]/ix.avgLen))
		}
	}
}

// lexHit is one statement and its score against a query, relative to the
// statement's score against itself (1: the query holds the statement's
// every term).
type lexHit struct {
	doc   int
	score float32
	rel   float32
}

// nearest returns the k statements with the highest BM25 score against
// text, with their relative scores.
func (ix *lexIndex) nearest(text string, k int, acc []float32, terms []lexTerm) []lexHit {
	ix.scores(lexTerms(text, terms[:0]), acc)
	if k <= 0 {
		return nil
	}
	// The k best (higher score, then lower doc) kept in order as the
	// scores are read: k is small (the audit asks for 1), and sorting
	// every statement that shares a word was most of the time here.
	before := func(a, b lexHit) bool { return a.score > b.score || a.score == b.score && a.doc < b.doc }
	var hits []lexHit
	for d, s := range acc {
		if s <= 0 {
			continue
		}
		h := lexHit{doc: d, score: s, rel: s / ix.self[d]}
		if len(hits) == k && !before(h, hits[k-1]) {
			continue
		}
		i := sort.Search(len(hits), func(i int) bool { return before(h, hits[i]) })
		if len(hits) < k {
			hits = append(hits, lexHit{})
		}
		copy(hits[i+1:], hits[i:len(hits)-1])
		hits[i] = h
	}
	return hits
}

// lexTerms appends the weighted terms of text: stemmed, synonym-mapped
// words (stop words dropped) at weight 1 and their character 4-grams.
func lexTerms(text string, out []lexTerm) []lexTerm {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for i := 0; i < len(words); i++ {
		w := words[i]
		// Phrases first: "exclusive or", "show up", "more than once".
		if p, n := phraseAt(words[i:]); n > 0 {
			for _, w := range strings.Fields(p) {
				out = appendWord(out, canonical(w))
			}
			i += n - 1
			continue
		}
		if stopWords[w] {
			continue
		}
		// "1s" and "0s" are the digits.
		if len(w) >= 2 && w[len(w)-1] == 's' && isDigits(w[:len(w)-1]) {
			w = w[:len(w)-1]
		}
		out = appendWord(out, canonical(w))
	}
	return out
}

// canonical maps a word to its synonym table entry, or its stem.
func canonical(w string) string {
	if s, ok := synonyms[w]; ok {
		return s
	}
	st := stem(w)
	if s, ok := synonyms[st]; ok {
		return s
	}
	return st
}

// appendWord appends the terms of word w: fpHash("w\x00"+w), and
// fpHash("c\x00"+g) of every character 4-gram g of "^"+w+"$", computed
// without building those strings (FNV-1a goes on from the prefix's state).
func appendWord(out []lexTerm, w string) []lexTerm {
	out = append(out, lexTerm{h: fmix64(fnvOn(fnvWordTerm, w)), w: 1})
	if len(w) < charGramsN {
		return out
	}
	// Byte p of "^"+w+"$".
	at := func(p int) byte {
		switch p {
		case 0:
			return '^'
		case len(w) + 1:
			return '$'
		}
		return w[p-1]
	}
	for i := 0; i+charGramsN <= len(w)+2; i++ {
		h := fnvCharTerm
		for p := i; p < i+charGramsN; p++ {
			h = (h ^ uint64(at(p))) * fnvPrime
		}
		out = append(out, lexTerm{h: fmix64(h), w: charGramW})
	}
	return out
}

// fnvOn goes on with FNV-1a (fpHash before its finaliser) from state h
// over s.
func fnvOn(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// The FNV-1a states after the prefixes of appendWord's terms.
var (
	fnvWordTerm = fnvOn(14695981039346656037, "w\x00")
	fnvCharTerm = fnvOn(14695981039346656037, "c\x00")
)

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// phraseAt returns the canonical word of a phrase starting at words[0]
// and its length in words, or 0.
func phraseAt(words []string) (string, int) {
	for _, p := range phrases {
		if len(p.words) <= len(words) && slicesEqual(p.words, words[:len(p.words)]) {
			return p.canon, len(p.words)
		}
	}
	return "", 0
}

func slicesEqual(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type phrase struct {
	words []string
	canon string
}

// phrases are multi-word wordings of one statement concept.
var phrases = func() []phrase {
	var out []phrase
	for _, l := range strings.Split(`exclusive or=xor
show up=occur
shows up=occur
showed up=occur
more than once=duplicate
only once=unique
most often=max occur
most frequent=max occur
most frequently=max occur
most common=max occur
two or more times=duplicate
at least twice=duplicate
whole number=integer
whole numbers=integer
in common=common
give back=return
gives back=return
find out=check
smallest to largest=ascend
lowest to highest=ascend
largest to smallest=descend
highest to lowest=descend
blank space=space
white space=space
how many=count
number of=count
nth=n
n th=n
k th=k
kth=k`, "\n") {
		ws, canon, _ := strings.Cut(l, "=")
		out = append(out, phrase{words: strings.Fields(ws), canon: canon})
	}
	// Longer phrases first, so "two or more times" wins over shorter ones.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].words) > len(out[j].words) })
	return out
}()

// synonyms map a (stemmed or unstemmed) word to the word statements use
// most for the concept.
var synonyms = func() map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(`integer: int ints integ
remove: drop delete eliminate discard erase strip
element: item value entry member elem
occur: appear occurrence
duplicate: repeated repeat duplicat
string: text str
list: array sequence
min: minimum smallest lowest least
max: maximum largest biggest greatest highest
ascend: ascending increasing
descend: descending decreasing
character: char letter
sum: total
check: determine whether tell verify
count: tally
number: num
space: blank whitespace
product: multiply multiplication
divide: division
position: index
equal: same
length: len
reverse: backward backwards invert
sort: sorted order
xor: exclusive
intersection: common shared
unique: distinct`, "\n") {
		canon, ws, _ := strings.Cut(l, ":")
		for _, w := range strings.Fields(ws) {
			m[w] = canon
		}
	}
	return m
}()
