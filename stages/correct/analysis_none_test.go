package correct

import (
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
)

// TestAnalysisOfNone: a logic bug whose run returned None is said to
// return None, never "a value, just not the right one".
func TestAnalysisOfNone(t *testing.T) {
	code := "def f(x):\n    [x * 2]\n"
	for _, tc := range []struct {
		actual string
		want   string
		not    string
	}{
		{"None", "None", "just not the right one"},
		{"3", "", "None"},
	} {
		v := harness.Verdict{Cases: []harness.CaseResult{{Test: "assert f(1) == [2]", Kind: harness.KindWrongAnswer,
			Input: "f(1)", Expected: "[2]", Actual: tc.actual}}}
		r := newRun(v, time.Time{})
		got := analysis(r, code)
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("actual %s: analysis %q lacks %q", tc.actual, got, tc.want)
		}
		if strings.Contains(got, tc.not) {
			t.Errorf("actual %s: analysis %q says %q", tc.actual, got, tc.not)
		}
	}
}
