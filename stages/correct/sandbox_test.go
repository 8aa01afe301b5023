package correct

import (
	"context"
	"os"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
)

// sandbox opens the real sandbox for a test: bubblewrap, or the URL in
// $CODEFEEDBACK_CORRECT_SANDBOX (e.g. docker://codefeedback-sandbox:bookworm).
func sandbox(tb testing.TB) executors.Executor {
	tb.Helper()
	url := os.Getenv("CODEFEEDBACK_CORRECT_SANDBOX")
	if url == "" {
		url = "bwrap://"
	}
	ex, err := executors.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("open sandbox %s: %v", url, err)
	}
	tb.Cleanup(func() { ex.Close() })
	return ex
}
