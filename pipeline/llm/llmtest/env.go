package llmtest

import (
	"strings"
	"testing"
)

// ClearEnv empties, for the rest of t, every variable that could point the
// model service at another endpoint, model or key (those llm.Config.WithEnv
// reads: OPENAI_*, CODEFEEDBACK_LLM_*, and each named stage's
// CODEFEEDBACK_<STAGE>_*), so that a test sees only what it sets.
func ClearEnv(t testing.TB, stages ...string) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	prefixes := []string{"CODEFEEDBACK_LLM_"}
	for _, s := range stages {
		prefixes = append(prefixes, "CODEFEEDBACK_"+strings.ToUpper(strings.ReplaceAll(s, "-", "_"))+"_")
	}
	for _, p := range prefixes {
		for _, k := range []string{"BASE_URL", "MODEL", "API_KEY_ENV"} {
			t.Setenv(p+k, "")
		}
	}
}
