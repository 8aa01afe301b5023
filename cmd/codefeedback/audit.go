package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type auditOptions struct {
	dataset       string
	against       []string
	benchDir      string
	download      bool
	skipChecksum  bool
	json          bool
	decontaminate string
	removed       string
	failOnLeak    bool
	show          int
	embed         bool
	embThreshold  float64
	judgeModel    string
	baseURL       string
	apiKeyEnv     string
	judgeCache    string
	topK          int
	minAgreement  float64
	measures      leak.Options
	stdout        io.Writer
	stderr        io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "audit",
		Usage:     "measure benchmark leakage (HumanEval, MBPP, EvalPlus, any problem file) in a dialogue dataset, and remove it",
		ArgsUsage: "DATASET",
		Description: "DATASET is Code-Feedback-style JSONL / JSON array (plain, .gz, .zst) or Parquet.\n" +
			"Measures: the share of code lines in windows of consecutive lines that also occur in a benchmark's\n" +
			"solutions and tests (per benchmark and overall, with the most shared lines), and 13-gram overlap of the\n" +
			"dialogue text with each benchmark problem; code fingerprints (exact and renamed); solution statements in\n" +
			"the renamed form, any order (a copy whose names, statement order or line breaks changed); tables and\n" +
			"strings only one task's solution holds. A dialogue is flagged when it shares an n-gram with a task, its\n" +
			"line score against one task exceeds --line-threshold, or a code measure attributes it to one task.\n" +
			"With --judge-model, the judge is calibrated on labelled pairs first and fails closed: an unreadable\n" +
			"answer is asked again, then reported as unknown and the exit is 1. Benchmarks are read from --bench-dir, else\n" +
			"$" + benchmarks.EnvDir + ", else the user cache filled by `codefeedback bench fetch` (or --download);\n" +
			"known files are checked against their SHA-256.",
		Flags: append(concurrencyFlags("dialogues audited at once", 0, "number of CPUs", "workers"),
			&cli.StringSliceFlag{Name: "against", Value: cli.NewStringSlice("humaneval", "mbpp"), Usage: "benchmarks: humaneval, mbpp, humaneval+, mbpp+, or problem FILE paths (comma-separated or repeated)"},
			&cli.StringFlag{Name: "bench-dir", Usage: "directory holding the benchmark files (humaneval/HumanEval.jsonl.gz, mbpp/mbpp.jsonl, evalplus/...); default $" + benchmarks.EnvDir + ", else the user cache"},
			&cli.BoolFlag{Name: "download", Usage: "first fetch the named known benchmarks that are missing (as 'codefeedback bench fetch' does)"},
			&cli.BoolFlag{Name: "skip-checksum", Usage: "accept known benchmark files whose SHA-256 differs from the published file"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON (settings, per-benchmark figures, all findings) instead of a table"},
			&cli.StringFlag{Name: "decontaminate", Usage: "write the dataset without the flagged dialogues to `OUT` (same record format; .parquet stays Parquet)"},
			&cli.StringFlag{Name: "removed", Usage: "write what was removed and why to `FILE` (JSONL; default OUT.removed.jsonl)"},
			&cli.BoolFlag{Name: "fail-on-leak", Usage: fmt.Sprintf("exit with code %d when any dialogue is flagged", exitLeak)},
			&cli.IntFlag{Name: "window", Value: leak.DefaultOptions.Window, Usage: "consecutive code lines that must match (1 = per line)"},
			&cli.IntFlag{Name: "ngram", Value: leak.DefaultOptions.N, Usage: "n-gram length in word tokens"},
			&cli.Float64Flag{Name: "line-threshold", Value: leak.DefaultOptions.LineThreshold, Usage: "flag when the covered share of a task's solution or test lines exceeds this"},
			&cli.IntFlag{Name: "min-ngrams", Value: leak.DefaultOptions.MinNGrams, Usage: "flag when a dialogue shares at least this many distinct n-grams with one task"},
			&cli.IntFlag{Name: "min-chars", Value: leak.DefaultLineOptions.MinChars, Usage: "ignore normalised code lines shorter than this"},
			&cli.BoolFlag{Name: "keep-imports", Usage: "count import lines as code lines"},
			&cli.IntFlag{Name: "top-lines", Value: leak.DefaultOptions.TopLines, Usage: "shared lines listed per benchmark"},
			&cli.Float64Flag{Name: "statement-share", Value: leak.DefaultStatementOptions.Threshold, Usage: "flag when one turn holds this weighted share of a task's solution statements (renamed, any order)"},
			&cli.BoolFlag{Name: "no-statements", Usage: "turn off the statement and literal measures (renamed/reordered solutions, unique tables and strings)"},
			&cli.Float64Flag{Name: "judge-min-agreement", Value: leak.DefaultMinAgreement, Usage: "share of the labelled calibration pairs the judge must answer right before the audit trusts it"},
			&cli.IntFlag{Name: "show", Value: 50, Usage: "findings listed in the table (-1: all)"},
			&cli.BoolFlag{Name: "embed", Usage: "also run the paraphrase check: TF-IDF cosine of each dialogue's first user turn with every task statement"},
			&cli.Float64Flag{Name: "embed-threshold", Value: leak.DefaultEmbedThreshold, Usage: "flag when the --embed cosine is at least this (without --judge-model)"},
			&cli.StringFlag{Name: "judge-model", Usage: "with --embed: a model (any OpenAI-compatible endpoint) decides same task or not for each dialogue's --top-k nearest statements"},
			&cli.IntFlag{Name: "top-k", Value: leak.DefaultParaphraseTopK, Usage: "candidates per dialogue sent to the judge"},
			&cli.StringFlag{Name: "base-url", Usage: "judge endpoint including /v1 (default $OPENAI_BASE_URL or OpenAI)"},
			&cli.StringFlag{Name: "api-key-env", Value: llm.DefaultAPIKeyEnv, Usage: "variable holding the judge's API key"},
			&cli.StringFlag{Name: "judge-cache", Usage: "store of the judge's answers (default: the user cache's codefeedback/audit-judge.db)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return withCode(exitUsage, errors.New("audit: want DATASET"))
			}
			if c.NArg() > 1 {
				return withCode(exitUsage, fmt.Errorf("audit: want one DATASET, got also %q", c.Args().Tail()))
			}
			var against []string
			for _, a := range c.StringSlice("against") {
				against = append(against, strings.Split(a, ",")...)
			}
			return runAudit(c.Context, auditOptions{
				dataset: c.Args().First(), against: against, benchDir: c.String("bench-dir"),
				download: c.Bool("download"), skipChecksum: c.Bool("skip-checksum"), json: c.Bool("json"),
				decontaminate: c.String("decontaminate"), removed: c.String("removed"), failOnLeak: c.Bool("fail-on-leak"),
				show: c.Int("show"), embed: c.Bool("embed"), embThreshold: c.Float64("embed-threshold"),
				judgeModel: c.String("judge-model"), baseURL: c.String("base-url"), apiKeyEnv: c.String("api-key-env"),
				judgeCache: c.String("judge-cache"), topK: c.Int("top-k"),
				measures: leak.Options{
					Lines:  leak.LineOptions{MinChars: c.Int("min-chars"), KeepImports: c.Bool("keep-imports")},
					Window: c.Int("window"), N: c.Int("ngram"), LineThreshold: c.Float64("line-threshold"),
					MinNGrams: c.Int("min-ngrams"), Workers: concurrency(c, "workers"), TopLines: c.Int("top-lines"),
					Statements: leak.StatementOptions{Threshold: c.Float64("statement-share"), Off: c.Bool("no-statements")},
				},
				minAgreement: c.Float64("judge-min-agreement"),
				stdout:       outWriter(c.App.Writer), stderr: errWriter(c.App.ErrWriter),
			})
		},
	})
}

func outWriter(w io.Writer) io.Writer {
	if w == nil {
		return os.Stdout
	}
	return w
}

// runAudit loads the benchmarks, audits the dataset, prints the report and,
// with --decontaminate, writes the cleaned dataset and the removed file.
func runAudit(ctx context.Context, o auditOptions) error {
	m := o.measures
	if m.Window < 1 || m.N < 1 || m.MinNGrams < 1 || m.Lines.MinChars < 1 || m.LineThreshold <= 0 || m.LineThreshold > 1 ||
		m.Statements.Threshold <= 0 || m.Statements.Threshold > 1 || o.minAgreement < 0 || o.minAgreement > 1 {
		return withCode(exitUsage, errors.New("audit: --window, --ngram, --min-ngrams and --min-chars must be >= 1, --line-threshold and --statement-share in (0, 1], --judge-min-agreement in [0, 1]"))
	}
	if o.removed != "" && o.decontaminate == "" {
		return withCode(exitUsage, errors.New("audit: --removed needs --decontaminate"))
	}
	if o.decontaminate != "" {
		if o.removed == "" {
			o.removed = o.decontaminate + ".removed.jsonl"
		}
		if err := leak.RefuseSameFile(o.dataset, o.decontaminate, o.removed); err != nil {
			return withCode(exitUsage, err)
		}
	}
	if err := checkInputFile("audit", o.dataset); err != nil {
		return err
	}
	dir, err := benchmarks.Dir(o.benchDir)
	if err != nil {
		return err
	}
	if o.download {
		f := &benchmarks.Fetcher{Client: &http.Client{Timeout: 5 * time.Minute}}
		for _, a := range o.against {
			if s, ok := benchmarks.Lookup(a); ok {
				if _, err := f.Fetch(ctx, dir, s); err != nil {
					return err
				}
			}
		}
	}
	benches, err := leak.Load(o.against, leak.LoadOptions{Dir: dir, SkipChecksum: o.skipChecksum})
	if err != nil {
		return withCode(exitBadData, err)
	}
	a, err := leak.New(benches, m)
	if err != nil {
		return withCode(exitBadData, err)
	}
	if o.judgeModel != "" && !o.embed {
		return withCode(2, errors.New("audit: --judge-model needs --embed (the embedding step proposes the candidates)"))
	}
	var acct *llm.Accountant
	if o.embed {
		po := leak.ParaphraseOptions{Threshold: o.embThreshold, TopK: o.topK, MinAgreement: o.minAgreement}
		if o.judgeModel != "" {
			judge, db, a2, err := auditJudge(o)
			if err != nil {
				return err
			}
			defer db.Close()
			po.Judge, acct = judge, a2
		}
		if err := a.EnableParaphrase(ctx, embed.NewTFIDF(leak.ParaphraseDim), po); err != nil {
			if errors.Is(err, leak.ErrJudgeUntrusted) {
				return withCode(exitFailed, err)
			}
			return err
		}
	}
	flagged := leak.FlaggedBySeq{}
	start := time.Now()
	var rep *leak.Report
	if schema.IsParquet(o.dataset) {
		rep, err = a.Run(ctx, leak.ReadDialogues(ctx, o.dataset), flagged.Add)
	} else {
		// JSONL: the workers decode the records in parallel.
		rep, err = a.RunRecords(ctx, leak.RawRecords(ctx, o.dataset), flagged.Add)
	}
	if err != nil {
		var ae *leak.RecordError
		if errors.As(err, &ae) {
			err = locateRecord(o.dataset, ae)
		}
		return inputOr("audit", o.dataset, err, exitFailed)
	}
	fmt.Fprintf(o.stderr, "audit: %d dialogues in %.1fs against %s\n", rep.Dialogues, time.Since(start).Seconds(), benchNames(benches))
	var unknown int64
	if acct != nil {
		var n, same int64
		n, same, unknown = a.JudgeCounts()
		u := acct.Snapshot().Total
		fmt.Fprintf(o.stderr, "audit: judge saw %d candidate pairs, called %d the same task (%d unknown: unreadable after a repair request); %d requests, %d+%d tokens, $%.4f\n",
			n, same, unknown, u.Requests, u.PromptTokens, u.CompletionTokens, u.Cost)
	}
	if o.json {
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("audit: write report: %w", err)
		}
	} else if err := leak.WriteTable(o.stdout, rep, o.show); err != nil {
		return fmt.Errorf("audit: write report: %w", err)
	}
	if o.decontaminate != "" {
		removed := o.removed
		kept, err := leak.Decontaminate(ctx, o.dataset, o.decontaminate, removed, flagged)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.stderr, "audit: wrote %d dialogues to %s, %d removed (reasons in %s)\n", kept, o.decontaminate, len(flagged), removed)
	}
	if unknown > 0 {
		// Fail closed: an unknown answer is an undecided pair, not a
		// "different" one; the report and the cleaned file are written,
		// and the exit says the audit is incomplete.
		return withCode(exitFailed, fmt.Errorf("audit: the paraphrase judge gave %d answers in no readable form (listed in the report): the audit is incomplete", unknown))
	}
	if o.failOnLeak && rep.Flagged > 0 {
		return withCode(exitLeak, fmt.Errorf("audit: %d of %d dialogues flagged", rep.Flagged, rep.Dialogues))
	}
	return nil
}

// auditJudge builds the paraphrase judge's client, caching its answers in
// a store so a re-run pays for no answer twice.
func auditJudge(o auditOptions) (llm.Chatter, *store.Bolt, *llm.Accountant, error) {
	path := o.judgeCache
	if path == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, nil, nil, withCode(2, fmt.Errorf("audit: no user cache directory; pass --judge-cache: %w", err))
		}
		path = filepath.Join(c, "codefeedback", "audit-judge.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("audit: judge cache: %w", err)
	}
	db, err := store.OpenBolt(path, false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("audit: judge cache: %w", err)
	}
	cfg := llm.Config{Stage: "audit", BaseURL: o.baseURL, APIKeyEnv: o.apiKeyEnv, Params: llm.Params{Model: o.judgeModel}}
	if o.baseURL == "" {
		cfg = cfg.WithEnv(os.Getenv)
		cfg.Model = o.judgeModel
	}
	acct := llm.NewAccountant(nil, 0)
	c, err := llm.New(cfg, llm.Options{Cache: db, Accountant: acct})
	if err != nil {
		db.Close()
		return nil, nil, nil, withCode(2, fmt.Errorf("audit: judge: %w", err))
	}
	return c, db, acct, nil
}

// locateRecord turns a record the auditor could not decode (its position
// in the stream) into the file's line or element, as schema's readers
// name a bad record: the workers decode in parallel and only know the
// position, so the file is read again up to that record (on failure only).
func locateRecord(path string, ae *leak.RecordError) error {
	raw, err := schema.OpenRaw(path)
	if err != nil {
		return err
	}
	defer raw.Close()
	for i := 0; i <= ae.Seq; i++ {
		if _, err := raw.Next(); err != nil {
			return fmt.Errorf("%s: record %d: %w", path, ae.Seq+1, ae.Err)
		}
	}
	return raw.Errorf("%v", ae.Err)
}

func benchNames(bs []leak.Benchmark) string {
	n := make([]string, len(bs))
	for i, b := range bs {
		n[i] = fmt.Sprintf("%s (%d)", b.Name, len(b.Problems))
	}
	return strings.Join(n, ", ")
}
