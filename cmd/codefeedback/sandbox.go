package main

import (
	"context"
	"fmt"

	"github.com/codefeedback/codefeedback/executors"
)

// executorURL is command cmd's --executor URL raw with the command's
// defaults (key, value pairs) added where raw sets none, checked: a bad
// URL is a usage error.
func executorURL(cmd, raw string, defaults ...string) (string, error) {
	u, err := executors.WithDefaults(raw, defaults...)
	if err == nil {
		err = executors.Check(u)
	}
	if err != nil {
		return "", withCode(exitUsage, fmt.Errorf("%s: --executor: %w", cmd, err))
	}
	return u, nil
}

// openSandbox checks command cmd's --executor URL and opens it: a bad URL
// is a usage error, a sandbox that does not open is unreachable.
func openSandbox(ctx context.Context, cmd, raw string) (executors.Executor, error) {
	if err := executors.Check(raw); err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("%s: --executor: %w", cmd, err))
	}
	ex, err := executors.Open(ctx, raw)
	if err != nil {
		return nil, withCode(exitUnreachable, fmt.Errorf("%s: open sandbox: %w", cmd, err))
	}
	return ex, nil
}
