package feedbackloop

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestPackedDialogue answers a packed group's requests in order in one
// session: the second request's code uses what the first one defined.
func TestPackedDialogue(t *testing.T) {
	ex := sandbox(t, "")
	packed := schema.Dialogue{ID: "pack-1", Sources: []string{"q1", "q2"}, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Define a list of the squares of 1..5."},
		{Role: schema.RoleUser, Content: "Now print their sum."},
	}}
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if llmtest.Role(call) == "judge" {
			return llmtest.Reply{Text: `{"correct": true, "reason": "fine"}`}
		}
		if strings.Contains(call.LastUser(), "print their sum") {
			return llmtest.Reply{Text: block("print(sum(squares))")}
		}
		return llmtest.Reply{Text: block("squares = [i * i for i in range(1, 6)]\nsquares")}
	}, nil)
	res := runTask(t, Options{FeedbackRounds: 0}, c, c, nil, ex, func(*Simulator) (Task, error) { return TaskFromDialogue(packed) })
	ex1 := execTurns(res.Dialogue)
	if !res.Passed || len(ex1) != 2 {
		t.Fatalf("passed %v with %d runs, want passed with 2", res.Passed, len(ex1))
	}
	if ex1[0].Content != "[1, 4, 9, 16, 25]" || ex1[1].Content != "55" {
		t.Errorf("runs showed %q and %q, want the list and 55 (state kept across requests)", ex1[0].Content, ex1[1].Content)
	}
	if got := res.Dialogue.Labels["outcomes"]; got != "1=pass t2.1=pass" {
		t.Errorf("outcomes %q, want 1=pass t2.1=pass", got)
	}
	if strings.Join(res.Dialogue.Sources, ",") != "q1,q2" {
		t.Errorf("sources %v, want the packed queries", res.Dialogue.Sources)
	}
}

func TestFailedLabelPolicy(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "No code this time, sorry."}
	}, nil)
	res := runMBPP(t, Options{FeedbackRounds: 0, Failed: FailedLabel}, c, nil, nil, ex)
	d := res.Dialogue
	if res.Passed || d.Labels["final_status"] != "fail" || d.Labels["rejected"] == "" || d.Labels["outcomes"] != "1=no_code" {
		t.Errorf("passed %v labels %v, want a failed dialogue labelled rejected with outcome no_code", res.Passed, d.Labels)
	}
}

// TestPackedOldCodeForNewRequest: a packed dialogue's second request
// answered with the first answer's code plus a docstring is sent back
// once; answered right, the dialogue keeps both requests; answered with the
// old code again, the second request is taken back and the first one
// stands alone with its own source.
func TestPackedOldCodeForNewRequest(t *testing.T) {
	ex := sandbox(t, "")
	packed := schema.Dialogue{ID: "pack-2", Sources: []string{"q1", "q2"}, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Write sort_a(xs) that sorts a list with merge sort, and print sort_a([3, 1, 2])."},
		{Role: schema.RoleUser, Content: "Now write sort_b(xs) that sorts it with counting sort, and print sort_b([3, 1, 2])."},
	}}
	const first = "def sort_a(xs):\n    return sorted(xs)\n\nprint(sort_a([3, 1, 2]))"
	const stale = "def sort_a(xs):\n    \"\"\"Sorts xs.\n\n    Counting sort would also work.\n    \"\"\"\n    return sorted(xs)\n\nprint(sort_a([3, 1, 2]))"
	const fresh = "def sort_b(xs):\n    counts = [0] * (max(xs) + 1)\n    for x in xs:\n        counts[x] += 1\n    return [i for i, c in enumerate(counts) for _ in range(c)]\n\nprint(sort_b([3, 1, 2]))"
	for _, tc := range []struct {
		name      string
		repaired  bool // the writer answers the repair prompt with new code
		wantRuns  int
		wantSrc   string
		wantLabel string
	}{
		{name: "repaired", repaired: true, wantRuns: 2, wantSrc: "q1,q2"},
		{name: "taken back", repaired: false, wantRuns: 1, wantSrc: "q1", wantLabel: "t2=old_code_for_new_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch {
				case llmtest.Role(call) == "judge":
					return llmtest.Reply{Text: `{"correct": true, "reason": "fine"}`}
				case strings.Contains(call.LastUser(), "previous answer"):
					if tc.repaired {
						return llmtest.Reply{Text: "Counting sort tallies each value, then lists the values in order.\n\n" + block(fresh)}
					}
					return llmtest.Reply{Text: block(stale)}
				case strings.Contains(call.LastUser(), "counting sort"):
					return llmtest.Reply{Text: "Here it is again, documented.\n\n" + block(stale)}
				}
				return llmtest.Reply{Text: "Merge sort, through sorted().\n\n" + block(first)}
			}, nil)
			res := runTask(t, Options{FeedbackRounds: 0}, c, c, nil, ex, func(*Simulator) (Task, error) { return TaskFromDialogue(packed) })
			d := res.Dialogue
			if !res.Passed || len(execTurns(d)) != tc.wantRuns {
				t.Fatalf("passed %v with %d runs (labels %v), want passed with %d", res.Passed, len(execTurns(d)), d.Labels, tc.wantRuns)
			}
			if got := strings.Join(d.Sources, ","); got != tc.wantSrc {
				t.Errorf("sources %s, want %s", got, tc.wantSrc)
			}
			if got := d.Labels[LabelRejected]; got != tc.wantLabel {
				t.Errorf("%s = %q, want %q", LabelRejected, got, tc.wantLabel)
			}
			for _, m := range d.Messages {
				if m.Role == schema.RoleAssistant && strings.Contains(m.Content, "Counting sort would also work") {
					t.Errorf("the old code came through: %q", m.Content)
				}
			}
			if !tc.repaired && (d.Labels[LabelTurnsDropped] != "1" || d.Messages[len(d.Messages)-1].Role == schema.RoleUser) {
				t.Errorf("turns_dropped %q, last message %s: want 1 and the first request's answer last", d.Labels[LabelTurnsDropped], d.Messages[len(d.Messages)-1].Role)
			}
		})
	}
}
