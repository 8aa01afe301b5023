package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/serve"
)

type serveOptions struct {
	Listen       string
	Executor     string
	Concurrency  int
	QueueTimeout time.Duration
	MaxBody      string
	MaxRun       time.Duration
	MaxCompile   time.Duration
	MaxMemory    string
	APIKeyEnv    string
}

func init() {
	var o serveOptions
	register(&cli.Command{
		Name:  "serve",
		Usage: "serve the sandbox over HTTP: SandboxFusion's POST /run_code, a tests-based POST /submit, /health, /metrics",
		Description: "A reward server for RL trainers (verl's sandbox_fusion reward, TRL GRPO reward functions) and anything else " +
			"that speaks SandboxFusion's run_code. Runs have the isolation and limits of every other run of the executor; " +
			"limits a request asks above the maxima here are clamped and the response's notes say so. At most --concurrency " +
			"runs at once (set it to the pool's size); further requests queue, and a client that goes away cancels its run. " +
			"Bodies over --max-body get 413. Binds to loopback unless an API key is set (the variable --api-key-env names).",
		Flags: append(concurrencyFlags("runs at once; further requests queue", executors.DefaultPoolSize(), "the pool's default size"),
			executorFlag(&o.Executor),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "address to listen on", Destination: &o.Listen},
			&cli.DurationFlag{Name: "queue-timeout", Usage: "answer 503 to a request that waited this long for a slot (0: wait while the client waits)", Destination: &o.QueueTimeout},
			&cli.StringFlag{Name: "max-body", Value: "16MiB", Usage: "largest request body", Destination: &o.MaxBody},
			&cli.DurationFlag{Name: "max-run-timeout", Value: 30 * time.Second, Usage: "largest run_timeout a request may ask", Destination: &o.MaxRun},
			&cli.DurationFlag{Name: "max-compile-timeout", Value: 60 * time.Second, Usage: "largest compile_timeout a request may ask", Destination: &o.MaxCompile},
			&cli.StringFlag{Name: "max-memory", Value: "2GiB", Usage: "largest memory_limit_MB a request may ask", Destination: &o.MaxMemory},
			&cli.StringFlag{Name: "api-key-env", Value: "CODEFEEDBACK_SERVE_API_KEY", Usage: "environment variable holding the API key (required to listen beyond loopback)", Destination: &o.APIKeyEnv},
		),
		Action: func(c *cli.Context) error {
			o.Concurrency = concurrency(c)
			return runServe(c.Context, o, os.Stderr)
		},
	})
}

// loopback reports whether addr's host is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runServe(ctx context.Context, o serveOptions, stderr io.Writer) error {
	key := os.Getenv(o.APIKeyEnv)
	if !loopback(o.Listen) && key == "" {
		return withCode(exitUsage, fmt.Errorf("serve: --listen %s is beyond loopback: set an API key in $%s", o.Listen, o.APIKeyEnv))
	}
	maxBody, err := executors.ParseBytes(o.MaxBody)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("serve: --max-body: %w", err))
	}
	maxMem, err := executors.ParseBytes(o.MaxMemory)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("serve: --max-memory: %w", err))
	}
	ex, err := openSandbox(ctx, "serve", o.Executor)
	if err != nil {
		return err
	}
	defer ex.Close()
	s := serve.New(serve.Config{Exec: ex, Concurrency: o.Concurrency, QueueTimeout: o.QueueTimeout, MaxBody: maxBody,
		MaxRunTimeout: o.MaxRun, MaxCompileTimeout: o.MaxCompile, MaxMemoryMB: maxMem >> 20, APIKey: key})
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("serve: %w", err))
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "serving %s on http://%s (POST /run_code, POST /submit, GET /health, GET /metrics; %d runs at once)\n",
		ex.Info().Driver, ln.Addr(), o.Concurrency)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Let runs in flight answer; their clients are waiting for them.
	sctx, cancel := context.WithTimeout(context.Background(), o.MaxRun+o.MaxCompile+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}
