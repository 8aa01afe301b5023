package evaluate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/schema"
)

// RoundScore is pass@1 after a number of refinement rounds: a sample
// counts as passed at round r when one of its rounds 0..r passed.
type RoundScore struct {
	Round   int     `json:"round"`
	Passed  int     `json:"passed"`
	Total   int     `json:"total"`
	PassAt1 float64 `json:"pass_at_1"` // percent
}

// BenchmarkReport is one benchmark's scores.
type BenchmarkReport struct {
	Name   string       `json:"name"`
	Total  int          `json:"total"`
	Rounds []RoundScore `json:"rounds"`
	// BasePassed counts samples whose last round passed the base tests
	// (plus benchmarks: whether or not the EvalPlus inputs passed too).
	BasePassed int `json:"base_passed"`
	// Failed lists the task ids that never passed; Errors those whose
	// model calls failed.
	Failed []string `json:"failed,omitempty"`
	Errors []string `json:"errors,omitempty"`
	// FeedbackRejected lists the task ids whose feedback the gate rejected
	// (code in human feedback): their refinement stopped there.
	FeedbackRejected []string `json:"feedback_rejected,omitempty"`
	// Skipped lists malformed records left out; Error is set when the
	// benchmark could not be loaded at all.
	Skipped []Skipped `json:"skipped,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// Report is the result of an evaluation run.
type Report struct {
	Model         string            `json:"model"`
	Feedback      string            `json:"feedback_mode"`
	Rounds        int               `json:"rounds"`
	Seed          int               `json:"seed"`
	PromptVersion string            `json:"prompt_version"`
	Benchmarks    []BenchmarkReport `json:"benchmarks"`
	Samples       int               `json:"samples"`
	CachedSamples int               `json:"cached_samples"`
	Duration      time.Duration     `json:"duration_ns"`
	// InterCode holds the InterCode metrics per environment (see
	// AddInterCode); their success per round is in Benchmarks too.
	InterCode []agent.Metrics `json:"intercode,omitempty"`
}

// Score builds the report of samples (in any order) for the benchmarks
// in names order.
func (e *Evaluator) Score(names []string, samples []Sample) Report {
	rep := Report{Model: e.opts.Model, Feedback: e.opts.Feedback, Rounds: e.opts.Rounds, Seed: e.opts.Seed,
		PromptVersion: e.PromptVersion(), Samples: len(samples)}
	by := map[string][]Sample{}
	for _, s := range samples {
		by[s.Benchmark] = append(by[s.Benchmark], s)
		if s.Cached {
			rep.CachedSamples++
		}
	}
	for _, n := range names {
		ss := by[n]
		br := BenchmarkReport{Name: n, Total: len(ss)}
		for r := 0; r <= e.opts.Rounds; r++ {
			sc := RoundScore{Round: r, Total: len(ss)}
			for _, s := range ss {
				if s.PassedRound >= 0 && s.PassedRound <= r {
					sc.Passed++
				}
			}
			if sc.Total > 0 {
				sc.PassAt1 = 100 * float64(sc.Passed) / float64(sc.Total)
			}
			br.Rounds = append(br.Rounds, sc)
		}
		for _, s := range ss {
			if len(s.Rounds) > 0 && s.Rounds[len(s.Rounds)-1].BasePassed {
				br.BasePassed++
			}
			if !s.Passed {
				br.Failed = append(br.Failed, s.TaskID)
			}
			if s.Error != "" {
				br.Errors = append(br.Errors, s.TaskID)
			}
			for _, rd := range s.Rounds {
				if rd.FeedbackRejected != "" {
					br.FeedbackRejected = append(br.FeedbackRejected, s.TaskID)
					break
				}
			}
		}
		sort.Strings(br.Failed)
		sort.Strings(br.Errors)
		rep.Benchmarks = append(rep.Benchmarks, br)
	}
	return rep
}

// WriteTable prints the scores as a table: one row per benchmark and round.
func (r Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "model %s, feedback %s, %d refinement round(s)\n", r.Model, r.Feedback, r.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tround\tpassed\ttotal\tpass@1 (%)\t")
	for _, b := range r.Benchmarks {
		for _, s := range b.Rounds {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t\n", b.Name, s.Round, s.Passed, s.Total, s.PassAt1)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.InterCode) > 0 {
		if err := agent.WriteTable(w, r.InterCode); err != nil {
			return err
		}
	}
	for _, b := range r.Benchmarks {
		if len(b.Failed) > 0 {
			fmt.Fprintf(w, "%s: %d never passed: %s\n", b.Name, len(b.Failed), abbreviate(b.Failed, 20))
		}
		if len(b.Errors) > 0 {
			fmt.Fprintf(w, "%s: %d unfinished (model or judge errors): %s\n", b.Name, len(b.Errors), abbreviate(b.Errors, 20))
		}
		for _, s := range b.Skipped {
			fmt.Fprintf(w, "%s: skipped malformed record %s: %s\n", b.Name, s.TaskID, s.Reason)
		}
		if b.Error != "" {
			fmt.Fprintf(w, "%s: not evaluated: %s\n", b.Name, b.Error)
		}
		if len(b.FeedbackRejected) > 0 {
			fmt.Fprintf(w, "%s: %d feedback answers held code and were rejected (refinement stopped): %s\n", b.Name, len(b.FeedbackRejected), abbreviate(b.FeedbackRejected, 20))
		}
	}
	_, err := fmt.Fprintf(w, "%d samples (%d from the store) in %s\n", r.Samples, r.CachedSamples, r.Duration.Round(time.Millisecond))
	return err
}

func abbreviate(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, " ")
	}
	return strings.Join(ids[:n], " ") + fmt.Sprintf(" ... (%d more)", len(ids)-n)
}

// WriteFiles writes dir/results.json (the report) and dir/samples.jsonl
// (every sample: conversation, code, verdicts and execution records), each
// through a temporary file renamed into place.
func WriteFiles(dir string, rep Report, samples []Sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("evaluate: out dir: %w", err)
	}
	if err := schema.WriteAll(filepath.Join(dir, "samples.jsonl"), samples); err != nil {
		return err
	}
	return schema.WriteJSONAtomic(filepath.Join(dir, "results.json"), rep)
}
