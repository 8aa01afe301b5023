// Package filter holds the first stages of the Code-Feedback construction:
// dedup drops exact and near-duplicate queries (so nobody pays to rate a
// duplicate), and filter rates each query's difficulty 1-5 with two rubric
// prompts and keeps the hard ones. Ratings are emitted as records of their
// own, so a different threshold can be applied later from the cache
// without paying again.
package filter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Rubrics are the rubric names the filter knows; each is the template
// prompts/filter_rubric_<name>.tmpl.
var Rubrics = []string{"skills", "effort"}

// Rater rates queries with rubric prompts. Safe for concurrent use.
type Rater struct {
	Chat    llm.Chatter
	Model   string // recorded in ratings
	Repairs int    // repair prompts after an unreadable answer
	// MaxTokens bounds each answer (0 = server default).
	MaxTokens int
	rubrics   []prompts.Template
}

// NewRater loads the templates of the named rubrics.
func NewRater(chat llm.Chatter, model string, rubrics []string, repairs int) (*Rater, error) {
	r := &Rater{Chat: chat, Model: model, Repairs: repairs}
	for _, name := range rubrics {
		t, err := prompts.Get("filter_rubric_" + name)
		if err != nil {
			return nil, fmt.Errorf("filter: rubric %q: %w", name, err)
		}
		r.rubrics = append(r.rubrics, t)
	}
	return r, nil
}

// answer is a parsed rating answer.
type answer struct {
	Score  int
	Reason string
}

var reasonRe = regexp.MustCompile(`(?is)\breason(?:ing)?\b\s*[:=-]\s*(.+)`)

// parseRating reads a score 1-5 and a reason from whatever reasonable form
// the model used: "Score: 4\nReason: ...", JSON {"score": 4, "reason":
// "..."}, "**4** - because ...", "I'd rate it 4/5 since ...".
func parseRating(text string) (answer, error) {
	var j struct {
		Score      any    `json:"score"`
		Difficulty any    `json:"difficulty"`
		Rating     any    `json:"rating"`
		Reason     string `json:"reason"`
	}
	if strings.Contains(text, "{") && parse.JSON(text, &j) == nil {
		for _, v := range []any{j.Score, j.Difficulty, j.Rating} {
			var f float64
			switch x := v.(type) {
			case float64:
				f = x
			case string:
				f, _ = strconv.ParseFloat(strings.TrimSpace(x), 64)
			}
			if n := int(f + 0.5); n >= 1 && n <= 5 {
				return answer{Score: n, Reason: strings.TrimSpace(j.Reason)}, nil
			}
		}
	}
	n, err := parse.Score(text, 1, 5)
	if err != nil {
		return answer{}, err
	}
	reason := ""
	if m := reasonRe.FindStringSubmatch(text); m != nil {
		reason = m[1]
	} else if _, rest, ok := strings.Cut(strings.TrimSpace(text), "\n"); ok {
		reason = rest
	}
	return answer{Score: n, Reason: strings.TrimSpace(reason)}, nil
}

// repairPrompt asks for the two-line format again.
func repairPrompt(err error) string {
	return fmt.Sprintf("I could not read a score in your answer (%v). Reply again in exactly this form, "+
		"with a whole number from 1 to 5:\nScore: N\nReason: one short sentence", err)
}

// Rate returns one rating per rubric, in rubric order, asking for all
// rubrics concurrently. An answer still unreadable after the repairs gives
// a rating with Score 0 (unrated) and the raw answer. Model errors are
// returned as they are (wrapping llm.ErrRetriesExhausted,
// llm.ErrBudgetExceeded, ...).
func (r *Rater) Rate(ctx context.Context, q schema.Query) ([]schema.Rating, error) {
	out := make([]schema.Rating, len(r.rubrics))
	errs := make([]error, len(r.rubrics))
	done := make(chan int, len(r.rubrics))
	for i, t := range r.rubrics {
		go func() {
			out[i], errs[i] = r.rateOne(ctx, t, q)
			done <- i
		}()
	}
	for range r.rubrics {
		<-done
	}
	return out, errors.Join(errs...)
}

func (r *Rater) rateOne(ctx context.Context, t prompts.Template, q schema.Query) (schema.Rating, error) {
	rubric := strings.TrimPrefix(t.Name, "filter_rubric_")
	prompt, err := t.Render(map[string]any{"Query": strings.TrimSpace(q.Text)})
	if err != nil {
		return schema.Rating{}, err
	}
	req := llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{MaxTokens: r.MaxTokens}}
	a, resp, err := llm.ChatParse(ctx, r.Chat, req, r.Repairs, repairPrompt, parseRating)
	rt := schema.Rating{QueryID: q.ID, Rubric: rubric, Model: r.Model}
	if resp.Model != "" {
		rt.Model = resp.Model
	}
	var pe *llm.ParseError
	switch {
	case errors.As(err, &pe):
		rt.Raw = pe.Raw
		rt.Reason = "unrated: " + pe.Err.Error()
		return rt, nil
	case err != nil:
		return schema.Rating{}, fmt.Errorf("filter: rubric %s: %w", rubric, err)
	}
	rt.Score, rt.Reason = a.Score, a.Reason
	return rt, nil
}

// Rule decides from a query's ratings whether to keep it.
type Rule struct {
	Mode string // "both" (every rubric in Keep), "either" (any), "mean" (mean >= Min)
	Min  float64
	Keep []int
}

// ParseRule reads "both", "either" or "mean>=T" (T in 1..5).
func ParseRule(s string, keep []int) (Rule, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	switch s {
	case "both", "all", "":
		return Rule{Mode: "both", Keep: keep}, nil
	case "either", "any":
		return Rule{Mode: "either", Keep: keep}, nil
	}
	if t, ok := strings.CutPrefix(s, "mean>="); ok {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v < 1 || v > 5 {
			return Rule{}, fmt.Errorf("filter: rule %q: want mean>=T with T in 1..5", s)
		}
		return Rule{Mode: "mean", Min: v, Keep: keep}, nil
	}
	return Rule{}, fmt.Errorf("filter: rule %q: want both, either or mean>=T", s)
}

// Decide reports whether the ratings keep the query; unrated is true when
// any rating has Score 0, in which case keep is false and the caller's
// unrated policy applies.
func (r Rule) Decide(ratings []schema.Rating) (keep, unrated bool) {
	sum, in := 0, 0
	for _, rt := range ratings {
		if rt.Score == 0 {
			return false, true
		}
		sum += rt.Score
		if slices.Contains(r.Keep, rt.Score) {
			in++
		}
	}
	switch r.Mode {
	case "either":
		return in > 0, false
	case "mean":
		return len(ratings) > 0 && float64(sum)/float64(len(ratings)) >= r.Min, false
	default:
		return in == len(ratings) && len(ratings) > 0, false
	}
}
