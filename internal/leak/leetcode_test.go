package leak

import (
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

// leetCodeLabels are the flags of the LeetCodeDataset files of the shared
// data (train v0.2.0 and test v0.3.1, problem and reference solution)
// against HumanEval and MBPP with the default settings, read by hand:
// leak true when the LeetCode problem is the flagged task itself. This
// corpus was not used to set any threshold or to write generic.py: it
// measures precision on real code held out from the tuning.
var leetCodeLabels = map[string]struct {
	task string
	leak bool
	note string
}{
	"lc-LeetCode/integer-to-roman":                                      {"Mbpp/958", true, "integer to Roman numeral: the task, its value/symbol table"},
	"lc-LeetCode/roman-to-integer":                                      {"Mbpp/961", true, "Roman numeral to integer: the task, its symbol table"},
	"lc-LeetCode/find-k-pairs-with-smallest-sums":                       {"Mbpp/408", true, "k pairs with the smallest sums, one element from each array: the task, worded alike"},
	"lc-LeetCode/minimum-path-sum":                                      {"Mbpp/1", false, "grid path moving right or down; Mbpp/1's path also moves diagonally (the same DP table code)"},
	"lc-LeetCode/minimum-total-space-wasted-with-k-resizing-operations": {"Mbpp/380", false, "a DP over array resizings; Mbpp/380 generates a 2-D array (its list-comprehension table init shared)"},
}

// TestLeetCodeFlags audits the LeetCode problems and their solutions
// (about 2,100 real, generic algorithmic programs), logs every flag, and
// fails on a flag not in leetCodeLabels (read it and label it).
// Measured: 5 of 2,118 flagged, 3 of them the flagged task (60%, under the
// 80% bar: two DP programs share their table code with a short MBPP
// solution, by the renamed fingerprints); the test holds that count.
func TestLeetCodeFlags(t *testing.T) {
	a := testAuditor(t, Options{})
	flagged, leaks := 0, 0
	for _, f := range []string{"leetcode/LeetCodeDataset-v0.2.0-train.jsonl.gz", "leetcode/LeetCodeDataset-v0.3.1-test.jsonl.gz"} {
		ps, err := schema.LoadProblems(sharedtest.Path(t, f))
		if err != nil {
			t.Fatal(err)
		}
		ds := make([]schema.Dialogue, len(ps))
		for i, p := range ps {
			ds[i] = schema.Dialogue{ID: "lc-" + p.ID, Messages: []schema.Message{
				{Role: schema.RoleUser, Content: p.Text},
				{Role: schema.RoleAssistant, Content: "```python\n" + taskSolution(&p) + "\n```"},
			}}
		}
		rep, err := a.Run(t.Context(), Slice(ds), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d dialogues, %d flagged", f, rep.Dialogues, rep.Flagged)
		for _, fd := range rep.Findings {
			t.Logf("  %s %s %s %.2f %.150s", fd.DialogueID, fd.Method, fd.TaskID, fd.Score, fd.Evidence)
		}
		flagged += rep.Flagged
		for _, id := range rep.FlaggedIDs {
			l, ok := leetCodeLabels[id]
			if !ok {
				t.Errorf("%s flagged but not labelled: read it and add it to leetCodeLabels", id)
				continue
			}
			if l.leak {
				leaks++
			}
		}
	}
	t.Logf("LeetCode: %d flagged, %d of them the flagged task", flagged, leaks)
	if flagged-leaks > maxLeetCodeFalse {
		t.Errorf("%d flags are not the flagged task, want <= %d", flagged-leaks, maxLeetCodeFalse)
	}
}

// maxLeetCodeFalse is the measured number of LeetCode flags that are not
// the flagged task (leetCodeLabels).
const maxLeetCodeFalse = 2
