package leak

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"
)

// minHeldOutInTop is the measured number of held-out rewordings whose
// task is among the top DefaultParaphraseTopK: "total distance around the
// boundary" (perimeter, #9) and "which character shows up most often"
// (#7) share too few words with their statements.
const minHeldOutInTop = 6

type rewording struct{ Task, Ask string }

// paraphraseQueries returns the planted paraphrases and the held-out
// rewordings (written for this test, never used to choose the synonym
// table), with the problems of HumanEval and MBPP.
func paraphraseQueries(t *testing.T) (planted, heldout []rewording, he, mb []schema.Problem) {
	he, mb = testHumanEval(t), testMBPP(t)
	for _, r := range readJSONL[leakRecipe](t, "testdata/planted/leaks.jsonl") {
		if r.Kind == "paraphrase" {
			planted = append(planted, rewording{r.Task, r.Ask})
		}
	}
	heldout = readJSONL[rewording](t, "testdata/paraphrase/heldout.jsonl")
	return planted, heldout, he, mb
}

// TestParaphraseRetrieval ranks every benchmark statement against each
// reworded request and checks where the true task lands: the planted
// paraphrases must all be within the judge's candidates, the held-out ones
// (not used to tune the retriever) are logged with the dense TF-IDF's
// ranks for comparison.
func TestParaphraseRetrieval(t *testing.T) {
	planted, heldout, he, mb := paraphraseQueries(t)
	var stmts [2][]string
	id := map[string][2]int{}
	for bi, ps := range [][]schema.Problem{he, mb} {
		for ti := range ps {
			stmts[bi] = append(stmts[bi], statementText(&ps[ti]))
			id[ps[ti].ID] = [2]int{bi, ti}
		}
	}
	lx := newLexIndex(stmts[:])
	all := len(lx.docs)
	lexRank := func(q rewording) (int, float32) {
		want := lx.docOf(id[q.Task][0], id[q.Task][1])
		hits := lx.nearest(stripCode(q.Ask), all, make([]float32, all), nil)
		for r, h := range hits {
			if h.doc == want {
				return r + 1, h.rel
			}
		}
		return all + 1, 0
	}
	// The dense hashed TF-IDF on stemmed text, as the check used before.
	tf := embed.NewTFIDF(ParaphraseDim)
	var texts []string
	for _, ss := range stmts {
		for _, s := range ss {
			texts = append(texts, stemText(s))
		}
	}
	vecs, err := tf.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	denseRank := func(q rewording) int {
		v := tf.Transform([]string{stemText(stripCode(q.Ask))})[0]
		want := id[q.Task][0]*len(stmts[0]) + id[q.Task][1]
		type sc struct {
			i int
			c float32
		}
		var s []sc
		for i, tv := range vecs {
			s = append(s, sc{i, embed.Dot(v, tv)})
		}
		sort.Slice(s, func(i, j int) bool { return s[i].c > s[j].c })
		for r, x := range s {
			if x.i == want {
				return r + 1
			}
		}
		return -1
	}
	for _, set := range []struct {
		name string
		qs   []rewording
	}{{"planted", planted}, {"held-out", heldout}} {
		inTop := 0
		var ranks []string
		for _, q := range set.qs {
			r, rel := lexRank(q)
			if r <= DefaultParaphraseTopK {
				inTop++
			}
			ranks = append(ranks, fmt.Sprintf("%s bm25 #%d (rel %.2f) dense #%d", q.Task, r, rel, denseRank(q)))
		}
		t.Logf("%s: %d of %d true tasks in the top %d: %v", set.name, inTop, len(set.qs), DefaultParaphraseTopK, ranks)
		if want := map[string]int{"planted": len(set.qs), "held-out": minHeldOutInTop}[set.name]; inTop < want {
			t.Errorf("%s: %d of %d true tasks among the top %d candidates, want >= %d", set.name, inTop, len(set.qs), DefaultParaphraseTopK, want)
		}
	}
}

// stemText is how the paraphrase check fed the dense TF-IDF before
// lexIndex replaced it, kept as the baseline the retrieval test compares
// with: lowercased, stop words dropped, suffixes folded.
func stemText(text string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if stopWords[w] {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(stem(w))
	}
	return b.String()
}

// TestAppendWordMatchesConcatenation holds appendWord, which hashes its
// terms without building them, to fpHash of the built strings.
func TestAppendWordMatchesConcatenation(t *testing.T) {
	for _, w := range []string{"", "a", "abc", "abcd", "prime", "palindrome", "日本語", "x_1"} {
		want := []lexTerm{{h: fpHash("w\x00" + w), w: 1}}
		if len(w) >= charGramsN {
			b := "^" + w + "$"
			for i := 0; i+charGramsN <= len(b); i++ {
				want = append(want, lexTerm{h: fpHash("c\x00" + b[i:i+charGramsN]), w: charGramW})
			}
		}
		if got := appendWord(nil, w); !slices.Equal(got, want) {
			t.Errorf("appendWord(%q) = %v, want %v", w, got, want)
		}
	}
}
