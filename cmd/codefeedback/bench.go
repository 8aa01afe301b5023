package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/urfave/cli/v2"
)

type benchFetchOptions struct {
	names   []string
	dir     string
	mirror  string
	timeout time.Duration
	client  *http.Client // tests: a loopback server's client
	stdout  io.Writer
}

func init() {
	dir := &cli.StringFlag{Name: "bench-dir", Usage: "benchmark directory (default $" + benchmarks.EnvDir + ", else the user cache)"}
	register(&cli.Command{
		Name:  "bench",
		Usage: "fetch and list the public benchmarks (HumanEval, MBPP, HumanEval+, MBPP+) that audit and eval use",
		Subcommands: []*cli.Command{
			{
				Name:      "fetch",
				Usage:     "download benchmarks from their public locations into the user cache, SHA-256 checked",
				ArgsUsage: "[NAME...]",
				Description: "Fetches the named benchmarks (default: all of " + benchmarks.Names() + ") into\n" +
					"os.UserCacheDir()/codefeedback/benchmarks (or --bench-dir). A file already there with the\n" +
					"published checksum is kept; a download whose size or SHA-256 differs is discarded and the\n" +
					"command fails. Files appear only when complete.",
				Flags: []cli.Flag{dir,
					&cli.StringFlag{Name: "mirror", Usage: "fetch FILE from `URL`/FILE instead of the public locations: an https:// mirror, or a Hub dataset hf://datasets/OWNER/NAME[@REV] ($HF_TOKEN)"},
					&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "per download"},
				},
				Action: func(c *cli.Context) error {
					return runBenchFetch(c.Context, benchFetchOptions{names: c.Args().Slice(), dir: c.String("bench-dir"),
						mirror: c.String("mirror"), timeout: c.Duration("timeout"), stdout: outWriter(c.App.Writer)})
				},
			},
			{
				Name:  "list",
				Usage: "the known benchmarks, their files and whether the benchmark directory holds them (checksum verified)",
				Flags: []cli.Flag{dir, &cli.BoolFlag{Name: "json", Usage: "print the list as JSON"}},
				Action: func(c *cli.Context) error {
					return runBenchList(c.String("bench-dir"), c.Bool("json"), outWriter(c.App.Writer))
				},
			},
		},
	})
}

func runBenchFetch(ctx context.Context, o benchFetchOptions) error {
	var specs []benchmarks.Spec
	for _, n := range o.names {
		s, ok := benchmarks.Lookup(n)
		if !ok {
			return withCode(exitUsage, fmt.Errorf("bench fetch: unknown benchmark %q (known: %s)", n, benchmarks.Names()))
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		specs = benchmarks.Known
	}
	dir, err := benchmarks.Dir(o.dir)
	if err != nil {
		return withCode(exitUsage, err)
	}
	c := o.client
	if c == nil {
		c = &http.Client{Timeout: o.timeout}
	}
	f := &benchmarks.Fetcher{Client: c, Mirror: o.mirror}
	var errs []error
	for _, s := range specs {
		got, err := f.Fetch(ctx, dir, s)
		switch {
		case err != nil:
			errs = append(errs, err)
			fmt.Fprintf(o.stdout, "%-15s FAILED\n", s.Name)
		case got.URL == "":
			fmt.Fprintf(o.stdout, "%-15s ok (already there) %s\n", s.Name, got.Path)
		default:
			fmt.Fprintf(o.stdout, "%-15s fetched %s from %s\n", s.Name, got.Path, got.URL)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, benchmarks.ErrChecksum) {
			return withCode(exitBadData, err)
		}
		return err
	}
	return nil
}

// benchEntry is one line of `bench list` (--json: one element).
type benchEntry struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Status string `json:"status"` // ok, missing, wrong checksum
	About  string `json:"about"`
}

func runBenchList(dirFlag string, asJSON bool, w io.Writer) error {
	dir, err := benchmarks.Dir(dirFlag)
	if err != nil {
		return withCode(exitUsage, err)
	}
	var list []benchEntry
	missing := false
	for _, s := range benchmarks.Known {
		status := "ok"
		if err := benchmarks.Verify(s.Path(dir), s); errors.Is(err, benchmarks.ErrMissing) {
			status, missing = "missing", true
		} else if err != nil {
			status, missing = "wrong checksum", true
		}
		list = append(list, benchEntry{Name: s.Name, File: s.File, Status: status, About: s.About})
	}
	if asJSON {
		return writeJSON(w, struct {
			Dir        string       `json:"dir"`
			Benchmarks []benchEntry `json:"benchmarks"`
		}{dir, list})
	}
	fmt.Fprintf(w, "benchmark directory: %s\n", dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tfile\tstatus\tabout")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.File, displayStatus(e.Status), e.About)
	}
	tw.Flush()
	if missing {
		fmt.Fprintf(w, "%s to fill it\n", benchmarks.FetchHint)
	}
	return nil
}

// displayStatus shouts the one status that needs action beyond a fetch.
func displayStatus(s string) string {
	if s == "wrong checksum" {
		return "WRONG CHECKSUM"
	}
	return s
}
