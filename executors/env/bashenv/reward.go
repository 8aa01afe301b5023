package bashenv

import (
	"math"
	"strings"
	"unicode"

	"github.com/codefeedback/codefeedback/executors/env"
)

// Breakdown is InterCode's bash reward and its three parts.
type Breakdown struct {
	Reward      float64  `json:"reward"`
	FileDiff    float64  `json:"file_diff"`         // 0.33 * (1 - erf(|missing| + |extra|)) over git-status changes
	FileChanges float64  `json:"file_changes"`      // 0.33 * share of common added files with equal content
	Answer      float64  `json:"answer_similarity"` // 0.33 * TF-IDF cosine of the outputs
	Similarity  float64  `json:"similarity"`
	Missing     []change `json:"diff_miss,omitempty"`
	Extra       []change `json:"diff_extra,omitempty"`
	SameTotal   int      `json:"same_total"`
	SameCorrect int      `json:"same_correct"`
}

// reward computes InterCode's bash reward (BashEnv.get_reward):
// 0.01 + round(0.33*(1-erf(miss+extra)), 2) + round(0.33*same/total, 2)
// + round(0.33*tfidf(agentObs, goldObs), 2), where changes are git-status
// (path, status) pairs and "same" counts the changes both made with status
// A, ?? or C whose content hashes agree (0.33 when there are none).
// A gold command InterCode could not run (goldOK false) has output None,
// which the similarity's fallback finds equal to nothing.
func reward(agent, gold []change, agentTree, goldTree manifest, agentObs, goldObs string, goldOK bool) Breakdown {
	var b Breakdown
	inGold, inAgent := map[change]bool{}, map[change]bool{}
	for _, c := range gold {
		inGold[c] = true
	}
	for _, c := range agent {
		inAgent[c] = true
	}
	for _, c := range gold {
		if !inAgent[c] {
			b.Missing = append(b.Missing, c)
		}
	}
	for _, c := range agent {
		if !inGold[c] {
			b.Extra = append(b.Extra, c)
		}
	}
	b.FileDiff = env.Round2(0.33 * (1 - math.Erf(float64(len(b.Missing)+len(b.Extra)))))

	b.FileChanges = 0.33
	for _, c := range agent {
		if !inGold[c] || (c.Status != "A" && c.Status != "??" && c.Status != "C") {
			continue
		}
		b.SameTotal++
		if pathHash(agentTree, c.Path) == pathHash(goldTree, c.Path) {
			b.SameCorrect++
		}
	}
	if b.SameTotal > 0 {
		b.FileChanges = env.Round2(0.33 * float64(b.SameCorrect) / float64(b.SameTotal))
	}

	if goldOK {
		b.Similarity = TFIDFSimilarity(agentObs, goldObs)
	}
	b.Answer = env.Round2(0.33 * b.Similarity)
	b.Reward = 0.01 + b.FileDiff + b.FileChanges + b.Answer
	b.Reward = math.Round(b.Reward*1e9) / 1e9 // 0.01+0.33*3 prints as 1, as in Python
	return b
}

// TFIDFSimilarity is the cosine similarity of two documents under
// scikit-learn's default TfidfVectorizer fitted on just those two: lower-cased
// tokens of two or more word characters, raw counts, smooth idf
// ln((1+n)/(1+df))+1, l2 norm. With no token in either document sklearn
// raises and InterCode falls back to exact equality (1 or 0).
func TFIDFSimilarity(a, b string) float64 {
	ta, tb := tokens(a), tokens(b)
	if len(ta) == 0 && len(tb) == 0 {
		if a == b {
			return 1
		}
		return 0
	}
	ca, cb := counts(ta), counts(tb)
	idf := func(t string) float64 {
		df := 0
		if ca[t] > 0 {
			df++
		}
		if cb[t] > 0 {
			df++
		}
		return math.Log(3.0/float64(1+df)) + 1
	}
	va, vb := map[string]float64{}, map[string]float64{}
	for t, c := range ca {
		va[t] = float64(c) * idf(t)
	}
	for t, c := range cb {
		vb[t] = float64(c) * idf(t)
	}
	na, nb := norm(va), norm(vb)
	if na == 0 || nb == 0 {
		return 0
	}
	dot := 0.0
	for t, x := range va {
		dot += x * vb[t]
	}
	return dot / (na * nb)
}

func norm(v map[string]float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func counts(ts []string) map[string]int {
	m := map[string]int{}
	for _, t := range ts {
		m[t]++
	}
	return m
}

// tokens is sklearn's token_pattern r"(?u)\b\w\w+\b" after lowercasing:
// maximal runs of word characters, two or more long.
func tokens(s string) []string {
	s = strings.ToLower(s)
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) >= 2 {
			out = append(out, string(cur))
		}
		cur = cur[:0]
	}
	for _, r := range s {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Nd, r) {
			cur = append(cur, r)
		} else {
			flush()
		}
	}
	flush()
	return out
}
