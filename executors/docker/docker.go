package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/docker/docker/client"

	"github.com/codefeedback/codefeedback/executors"
)

func init() {
	executors.Register("docker", func(ctx context.Context, u *url.URL) (executors.Executor, error) {
		return Open(ctx, u)
	})
	executors.RegisterChecker("docker", func(u *url.URL) error {
		_, err := parseURL(u)
		return err
	})
}

// Open connects to the Docker engine named by the environment (DOCKER_HOST
// etc.), removes sandbox containers left by crashed processes, checks the
// image, and returns a pool of warm containers running the shared runner.
// The executor's Close removes every container it created.
func Open(ctx context.Context, u *url.URL) (executors.Executor, error) {
	o, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker: no engine answers (is dockerd running? DOCKER_HOST=%q): %w", cli.DaemonHost(), err)
	}
	// Best effort: a failure to clean up others' leftovers must not stop this run.
	_, _ = RemoveLeftovers(ctx, cli)
	l, err := NewLauncher(ctx, cli, o.cfg, o.pull)
	if err != nil {
		cli.Close()
		return nil, err
	}
	return NewExecutor(l, executors.PoolOptions{Size: o.exec.Pool, Limits: o.exec.Limits}), nil
}

// NewExecutor returns a pool over l whose Close also closes l, so that no
// container outlives the executor.
func NewExecutor(l *Launcher, opts executors.PoolOptions) executors.Executor {
	return &executor{Executor: executors.NewPool(l, opts), l: l}
}

type executor struct {
	executors.Executor
	l *Launcher
}

// Close ends the pool, then removes any container still starting or running.
func (e *executor) Close() error {
	return errors.Join(e.Executor.Close(), e.l.Close())
}
