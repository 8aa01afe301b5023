// Package leetcode builds dialogues from LeetCode-style problems (a
// reference solution, check() tests and an entry point such as
// "Solution().twoSum"):
//
//   - chains: 2-3 related problems (shared topic tags, or nearest neighbours
//     by TF-IDF over the problem text) asked one after another in one
//     dialogue; each problem is used at most once and the chains are the
//     same for the same input and seed. Without a model the assistant turns
//     are the reference solutions; with one the model answers and the tests
//     judge, in simulate's write-run-fix loop. Either way every answer is run
//     against its problem's tests and the execution turn is that real run.
//   - alternatives (model only): one problem solved twice, brute force then
//     optimal, or in Python and then in other languages; Python solutions
//     are judged by the tests, other languages are labelled unchecked since
//     the sandbox has no runner for them.
//
// Only problems whose reference solution passes its own tests are used, so
// a broken test never judges an answer.
package leetcode

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/neighbors"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"

	"github.com/codefeedback/codefeedback/internal/tally"
)

// Eligible reports whether p can be judged by the harness: Python, with a
// reference solution, tests and an entry point.
func Eligible(p schema.Problem) bool {
	return (p.Language == "" || p.Language == string(executors.Python)) &&
		strings.TrimSpace(p.Solution) != "" && len(p.Tests) > 0 && strings.TrimSpace(p.EntryPoint) != ""
}

// Tags returns p's topic tags: LeetCodeDataset v0.3 keeps them in a
// top-level "tags" field, v0.2 in "meta"; a "tags" metadata entry is read
// as a comma-separated list. Sorted, lower case, no duplicates.
func Tags(p schema.Problem) []string {
	var tags []string
	if raw, ok := p.Extra["tags"]; ok {
		_ = json.Unmarshal(raw, &tags)
	}
	if raw, ok := p.Extra["meta"]; ok && len(tags) == 0 {
		var meta struct {
			Tags []string `json:"tags"`
		}
		if json.Unmarshal(raw, &meta) == nil {
			tags = meta.Tags
		}
	}
	if s := p.Metadata["tags"]; s != "" && len(tags) == 0 {
		tags = strings.Split(s, ",")
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// jaccard is |a∩b| / |a∪b| of two sorted sets; 0 when either is empty.
func jaccard(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	both := tally.Common(a, b)
	return float64(both) / float64(len(a)+len(b)-both)
}

var (
	fenceRe       = regexp.MustCompile("(?s)```.*?```")
	boilerplateRe = regexp.MustCompile(`(?i)please complete the following python code precisely:?`)
)

// Statement is the problem text used for relatedness: the text without its
// starter code and the dataset's fixed instruction line.
func Statement(p schema.Problem) string {
	s := fenceRe.ReplaceAllString(p.Text, " ")
	return strings.TrimSpace(boilerplateRe.ReplaceAllString(s, " "))
}

// Related returns, for each problem, its k most related other problems,
// best first (ties by lower index): relatedness is the cosine of the
// problems' statement vectors plus tagWeight times the Jaccard index of
// their tags. vecs must be unit length.
func Related(vecs [][]float32, tags [][]string, tagWeight float64, k int) [][]neighbors.Neighbor {
	n := len(vecs)
	out := make([][]neighbors.Neighbor, n)
	workers := min(runtime.GOMAXPROCS(0), max(n, 1))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				top := make([]neighbors.Neighbor, 0, k+1)
				for j := range n {
					if j == i {
						continue
					}
					s := float32(float64(embed.Dot(vecs[i], vecs[j])) + tagWeight*jaccard(tags[i], tags[j]))
					if len(top) == k && !before(s, int32(j), top[k-1]) {
						continue
					}
					// Insert in order; the list is short, so a linear scan wins.
					at := len(top)
					for at > 0 && before(s, int32(j), top[at-1]) {
						at--
					}
					top = append(top, neighbors.Neighbor{})
					copy(top[at+1:], top[at:])
					top[at] = neighbors.Neighbor{ID: int32(j), Sim: s}
					if len(top) > k {
						top = top[:k]
					}
				}
				out[i] = top
			}
		}()
	}
	wg.Wait()
	return out
}

// before orders neighbours by relatedness, ties by lower index, so the
// result does not depend on scan order or worker count.
func before(sim float32, id int32, n neighbors.Neighbor) bool {
	if sim != n.Sim {
		return sim > n.Sim
	}
	return id < n.ID
}

// Chains groups problems into chains of the drawn sizes (pack's grouping:
// seeds visited in a seeded order, each taking its still-unused neighbours
// at or above floor). Each problem is in at most one chain.
func Chains(ctx context.Context, e embed.Embedder, ps []schema.Problem, o Options) ([][]int, error) {
	if len(ps) < 2 {
		return nil, nil
	}
	texts := make([]string, len(ps))
	tags := make([][]string, len(ps))
	for i, p := range ps {
		texts[i] = Statement(p)
		tags[i] = Tags(p)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("leetcode: embed problem texts: %w", err)
	}
	for _, v := range vecs {
		embed.Normalize(v)
	}
	nbrs := Related(vecs, tags, o.TagWeight, o.Neighbors)
	groups, _ := neighbors.Grouping{Sizes: o.Sizes, Floor: float32(o.Floor), Seed: uint64(o.Seed)}.Group(nbrs)
	return groups, nil
}

// pick chooses one variant by a hash of key: phrasing varies across
// dialogues but not across runs.
func pick(key string, variants ...string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return variants[int(h.Sum32()%uint32(len(variants)))]
}

// method is the called method of an entry point ("Solution().twoSum" -> "twoSum").
func method(entry string) string {
	entry = strings.TrimSpace(entry)
	if i := strings.LastIndexByte(entry, '.'); i >= 0 {
		return entry[i+1:]
	}
	return entry
}

// UserTurn is the user's message for the i-th problem of a chain.
func UserTurn(p schema.Problem, i int, chainID string) string {
	text := strings.TrimSpace(p.Text)
	if starter := starterCode(p); starter != "" && !strings.Contains(text, "```") {
		text += "\n\nStart from this code:\n```python\n" + starter + "\n```"
	}
	if i == 0 {
		return text
	}
	intro := pick(fmt.Sprint(chainID, i),
		"Thanks. Here is a related problem:",
		"Good. Now a similar one:",
		"Next, a related problem:",
		"That works. Can you also solve this one?")
	return intro + "\n\n" + text
}

// starterCode is LeetCodeDataset v0.3's starter_code field, if any.
func starterCode(p schema.Problem) string {
	var s string
	if raw, ok := p.Extra["starter_code"]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return strings.TrimRight(s, "\n")
}

// ShownCode is the reference program as the assistant shows it: the
// solution alone when the prompt is only an import preamble (LeetCodeDataset;
// the harness runs the preamble first), else prompt plus solution
// (HumanEval-style signature and body).
func ShownCode(p schema.Problem) string {
	if defRe.MatchString(p.Prompt) {
		return harness.Reference(p)
	}
	return p.Solution
}

var defRe = regexp.MustCompile(`(?m)^\s*(def|class|async\s+def)\s`)

func codeBlock(code string) string {
	return "```python\n" + strings.TrimRight(code, "\n") + "\n```"
}

// closing is the assistant's remark after a run, stating only what the
// verdict says.
func closing(v harness.Verdict) string {
	if v.Passed {
		return fmt.Sprintf("All %d test cases pass.", v.Total)
	}
	return fmt.Sprintf("%d of %d test cases pass.", v.PassedCount, v.Total)
}

// ReferenceChain is the model-free chain dialogue: for each problem the
// user asks, the assistant answers with the reference solution, the
// execution turn is the real verdict of that solution (vs[i], judged on
// the same code) and the assistant states the result.
func ReferenceChain(ps []schema.Problem, vs []harness.Verdict) schema.Dialogue {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	id := schema.StableID("dlg-leetcode", append([]string{"chain", "reference"}, ids...)...)
	var msgs []schema.Message
	passed := 0
	for i, p := range ps {
		v := vs[i]
		if v.Passed {
			passed++
		}
		intro := pick(id+p.ID,
			fmt.Sprintf("Here is a solution; `%s` does the work:", method(p.EntryPoint)),
			fmt.Sprintf("This implementation of `%s` solves it:", method(p.EntryPoint)),
			"Here is my solution:")
		e := v.Execution()
		msgs = append(msgs,
			schema.Message{Role: schema.RoleUser, Content: UserTurn(p, i, id)},
			schema.Message{Role: schema.RoleAssistant, Content: intro + "\n\n" + codeBlock(ShownCode(p))},
			schema.Message{Role: schema.RoleExecution, Content: strings.TrimRight(v.Feedback, "\n"), Exec: &e},
			schema.Message{Role: schema.RoleAssistant, Content: closing(v)})
	}
	status := "pass"
	if passed < len(ps) {
		status = "fail"
	}
	return schema.Dialogue{
		ID: id, Messages: msgs, Stage: "leetcode", Method: "chain-reference", Sources: ids,
		Labels: map[string]string{"mode": ModeChains, "chain_length": fmt.Sprint(len(ps)),
			"passed_turns": fmt.Sprint(passed), "final_status": status, "judge": "tests"},
	}
}
