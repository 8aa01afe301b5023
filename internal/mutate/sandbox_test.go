package mutate

import (
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// sandbox opens the real sandbox for a test: bubblewrap, or the URL in
// $CODEFEEDBACK_CORRECT_SANDBOX, the variable the correct stage's tests read.
func sandbox(tb testing.TB) executors.Executor {
	return sandboxtest.Open(tb, "CODEFEEDBACK_CORRECT_SANDBOX", "")
}
