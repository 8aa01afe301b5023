// Package audit is the "audit" pipeline stage: it audits every dialogue
// against the benchmarks with internal/leak, passes the clean ones on in
// order, drops (or labels) the flagged ones and writes the report and the
// removed list into the run directory.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// StageOptions are the pipeline file settings of the "audit" stage.
type StageOptions struct {
	// Against names the benchmarks (humaneval, mbpp, humaneval+, mbpp+) or
	// problem files to audit against.
	Against []string `yaml:"against" json:"against"`
	// Threshold is the line score above which a dialogue is flagged.
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// Decontaminate drops flagged dialogues; otherwise they pass with an
	// "audit" label stating why they were flagged.
	Decontaminate bool `yaml:"decontaminate" json:"decontaminate"`
	// NGram and Window are the n-gram length and the line window.
	NGram  int `yaml:"ngram" json:"ngram"`
	Window int `yaml:"window" json:"window"`
	// Embedding turns on the paraphrase check with the pipeline's embedder
	// (the `embedder:` section), or TF-IDF when the file has none, flagging
	// at cosine >= EmbedThreshold.
	Embedding      bool    `yaml:"embedding" json:"embedding"`
	EmbedThreshold float64 `yaml:"embed_threshold" json:"embed_threshold"`
	// Judge (with embedding) sends the TopK nearest task statements of each
	// dialogue to the model (`endpoint`, "" = the default) with the
	// audit_same_task prompt, and flags those it calls the same task. Its
	// calls are cached in the run store and cost in the manifest. Without a
	// model the stage says so and uses embed_threshold.
	Judge    bool   `yaml:"judge" json:"judge"`
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	TopK     int    `yaml:"top_k" json:"top_k"`
	// BenchDir is where the benchmark files are (default: $CODEFEEDBACK_BENCH_DIR,
	// else the user cache that `codefeedback bench fetch` fills). It is not
	// part of the cache key: the files' checksums are.
	BenchDir string `yaml:"bench_dir" json:"-"`
	// Missing says what to do when a benchmark's file is not found: "fail"
	// (the default: a leakage audit that silently checks nothing is worse
	// than none) or "skip", which audits against the benchmarks present,
	// logs a warning and records benchmarks_missing in the stage's stats.
	Missing string `yaml:"missing" json:"missing"`
}

// DefaultStageOptions audit against HumanEval and MBPP and drop what is
// flagged.
var DefaultStageOptions = StageOptions{
	Against:        []string{"humaneval", "mbpp"},
	Threshold:      leak.DefaultOptions.LineThreshold,
	Decontaminate:  true,
	NGram:          leak.DefaultN,
	Window:         leak.DefaultOptions.Window,
	EmbedThreshold: leak.DefaultEmbedThreshold,
	TopK:           leak.DefaultParaphraseTopK,
	Missing:        "fail",
}

// Validate checks the settings.
func (o StageOptions) Validate() error {
	if len(o.Against) == 0 {
		return errors.New("audit: against: name at least one benchmark (" + benchmarks.Names() + ") or problem file")
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		return fmt.Errorf("audit: threshold %v: want a value in (0, 1]", o.Threshold)
	}
	if o.Embedding && (o.EmbedThreshold <= 0 || o.EmbedThreshold > 1) {
		return fmt.Errorf("audit: embed_threshold %v: want a value in (0, 1]", o.EmbedThreshold)
	}
	if o.Missing != "fail" && o.Missing != "skip" {
		return fmt.Errorf("audit: missing %q: want fail or skip", o.Missing)
	}
	if o.Judge && !o.Embedding {
		return errors.New("audit: judge: needs embedding: true (the embedding step proposes the candidates)")
	}
	if o.TopK < 1 {
		return fmt.Errorf("audit: top_k %d must be >= 1", o.TopK)
	}
	if o.NGram < 1 || o.Window < 1 {
		return fmt.Errorf("audit: ngram %d and window %d must be >= 1", o.NGram, o.Window)
	}
	return nil
}

// stageVersion is the algorithm's version for the cache key; bump it when
// a change alters which dialogues are flagged.
const stageVersion = "audit-v4"

func init() {
	pipeline.Register("audit", DefaultStageOptions, newStage)
}

// benchmarkVersions returns each benchmark's content hash: the published
// checksum of a known benchmark (Load verifies it), the SHA-256 of a file.
func benchmarkVersions(against []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range against {
		if s, ok := benchmarks.Lookup(a); ok {
			out[s.Name] = s.SHA256
			continue
		}
		f, err := os.Open(a)
		if err != nil {
			return nil, fmt.Errorf("audit: against: %q is neither a known benchmark (%s) nor a readable file: %w", a, benchmarks.Names(), err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("audit: against: %w", err)
		}
		out[a] = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// presentBenchmarks splits against into the benchmarks whose files exist and
// those that do not.
func presentBenchmarks(benchDir string, against []string) (present, missing []string, err error) {
	dir, err := benchmarks.Dir(benchDir)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range against {
		p := a
		if s, ok := benchmarks.Lookup(a); ok {
			p = s.Path(dir)
		}
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, a)
			continue
		}
		present = append(present, a)
	}
	return present, missing, nil
}

// newStage builds the audit stage: an All stage that audits every dialogue
// item, passes the clean ones on in order, drops (or labels) the flagged
// ones, and writes the report and the removed list into the run directory.
func newStage(o StageOptions, svc *pipeline.Services) (pipeline.Stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var missing []string
	if o.Missing == "skip" {
		var err error
		if o.Against, missing, err = presentBenchmarks(o.BenchDir, o.Against); err != nil {
			return nil, err
		}
		if len(missing) > 0 && svc.Logger != nil {
			dir, _ := benchmarks.Dir(o.BenchDir)
			msg := "audit: not checked against benchmarks missing from the benchmark directory"
			if len(o.Against) == 0 {
				msg = "audit: skipped: no benchmark files; " + benchmarks.FetchHint
			}
			svc.Logger.Warn(msg, "missing", strings.Join(missing, ","), "dir", dir,
				"fill", benchmarks.FetchHint+" (or set bench_dir / $"+benchmarks.EnvDir+")")
		}
		if svc.Stats != nil {
			svc.Stats.Set("benchmarks_missing", float64(len(missing)))
			svc.Stats.Set("benchmarks_checked", float64(len(o.Against)))
		}
	}
	if len(o.Against) == 0 {
		// Nothing to audit against: pass every item on unchanged.
		return passStage{map[string]any{"algorithm": stageVersion, "benchmarks": "none", "missing": missing}}, nil
	}
	versions, err := benchmarkVersions(o.Against)
	if err != nil {
		return nil, err
	}
	version := map[string]any{"algorithm": stageVersion, "benchmarks": versions}
	var judge llm.Chatter
	if o.Embedding {
		version["embedder"] = embed.Identity(svc.Embedder)
		if svc.Embedder == nil {
			version["embedder"] = fmt.Sprintf("tfidf/%d", leak.ParaphraseDim)
		}
	}
	if o.Judge {
		c, err := llm.ForStage(svc, o.Endpoint)
		switch {
		case errors.Is(err, llm.ErrNoModel):
			if svc.Logger != nil {
				svc.Logger.Warn("audit: paraphrase judge skipped, no model configured; embed_threshold decides", "enable", llm.NoModelHint)
			}
			version["judge"] = "none"
		case err != nil:
			return nil, fmt.Errorf("audit: judge: %w", err)
		default:
			judge = c
			t, err := prompts.Get("audit_same_task")
			if err != nil {
				return nil, err
			}
			version["judge_prompt"] = t.Version
			if m, ok := svc.Model.(*llm.Models); ok {
				p, err := m.Params(svc.Name, o.Endpoint)
				if err != nil {
					return nil, fmt.Errorf("audit: %w", err)
				}
				version["judge"] = p
			}
		}
	}
	return &stage{o: o, svc: svc, judge: judge, version: version}, nil
}

// passStage passes every item on unchanged: nothing to audit against.
type passStage struct{ version any }

func (p passStage) Version() any { return p.version }

func (passStage) Each(_ context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	return []pipeline.Item{in}, nil
}

// stage is the "audit" stage.
type stage struct {
	o       StageOptions
	svc     *pipeline.Services
	judge   llm.Chatter // nil: no paraphrase judge
	version any
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	if st.svc.Stats != nil && out.Kind == pipeline.KindDialogue {
		st.svc.Stats.Add("dialogues_out", 1)
	}
}

// All implements pipeline.AllStage.
func (st *stage) All(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	return runStage(ctx, st.o, st.svc, st.judge, in, emit)
}

func runStage(ctx context.Context, o StageOptions, svc *pipeline.Services, judge llm.Chatter, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	dir, err := benchmarks.Dir(o.BenchDir)
	if err != nil {
		return err
	}
	benches, err := leak.Load(o.Against, leak.LoadOptions{Dir: dir})
	if err != nil {
		return err
	}
	a, err := leak.New(benches, leak.Options{Window: o.Window, N: o.NGram, LineThreshold: o.Threshold})
	if err != nil {
		return err
	}
	if o.Embedding {
		var e embed.Embedder = embed.NewTFIDF(leak.ParaphraseDim)
		if svc.Embedder != nil {
			if e, err = embed.ForStage(svc); err != nil {
				return err
			}
		}
		if err := a.EnableParaphrase(ctx, e, leak.ParaphraseOptions{Threshold: o.EmbedThreshold, TopK: o.TopK, Judge: judge}); err != nil {
			return err
		}
	}
	// pending holds each input item from when the reader hands it to the
	// auditor until its result comes back in order.
	type held struct {
		item pipeline.Item
		d    *schema.Dialogue
	}
	var mu, emitMu sync.Mutex
	pending := map[int]held{}
	// Results arrive on the auditor's goroutine while the reader passes
	// non-dialogue items on from another, so emits are serialised.
	emitOne := func(it pipeline.Item) error {
		emitMu.Lock()
		defer emitMu.Unlock()
		return emit(it)
	}
	dialogues := func(yield func(*schema.Dialogue, error) bool) {
		seq := 0
		for it, err := range in {
			if err != nil {
				yield(nil, err)
				return
			}
			if it.Kind != pipeline.KindDialogue {
				// Queries, problems and ratings are not training text: on unchanged.
				if err := emitOne(it); err != nil {
					yield(nil, err)
					return
				}
				continue
			}
			d, err := pipeline.As[schema.Dialogue](it, pipeline.KindDialogue)
			if err != nil {
				yield(nil, fmt.Errorf("audit: %w", err))
				return
			}
			mu.Lock()
			pending[seq] = held{item: it, d: &d}
			mu.Unlock()
			seq++
			if !yield(&d, nil) {
				return
			}
		}
	}
	var removed []leak.Removed
	rep, err := a.Run(ctx, dialogues, func(r *leak.Result) error {
		mu.Lock()
		h := pending[r.Seq]
		delete(pending, r.Seq)
		mu.Unlock()
		if !r.Flagged() {
			return emitOne(h.item)
		}
		removed = append(removed, leak.Removed{DialogueID: r.DialogueID, Seq: r.Seq, Reason: leak.Reason(r.Findings), Findings: r.Findings})
		if o.Decontaminate {
			return nil
		}
		d := h.d
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels["audit"] = leak.Reason(r.Findings)
		it, err := pipeline.DialogueItem(*d)
		if err != nil {
			return err
		}
		return emitOne(it)
	})
	if err != nil {
		return err
	}
	if s := svc.Stats; s != nil {
		s.Set("dialogues", float64(rep.Dialogues))
		s.Set("flagged", float64(rep.Flagged))
		s.Set("line_ratio", rep.LineRatio)
		if judge != nil {
			n, same, bad := a.JudgeCounts()
			s.Set("judge/pairs", float64(n))
			s.Set("judge/same", float64(same))
			s.Set("judge/unknown", float64(bad))
		}
		for _, b := range rep.Benchmarks {
			s.Set("line_ratio/"+b.Name, b.LineRatio)
			s.Set("flagged/"+b.Name, float64(b.Flagged))
		}
	}
	// A judge that fails closed: an answer it gave in no readable form is
	// a pair nobody decided, so the audit does not pass.
	var unknownErr error
	if _, _, bad := a.JudgeCounts(); bad > 0 {
		unknownErr = fmt.Errorf("audit: paraphrase judge: %d of the pairs it was asked got no readable answer after a repair request (listed in the report); the audit is incomplete", bad)
	}
	if svc.RunDir == "" {
		return unknownErr
	}
	name := svc.Name
	if name == "" {
		name = "audit"
	}
	if err := schema.WriteJSONAtomic(filepath.Join(svc.RunDir, name+".report.json"), rep); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := schema.WriteAll(filepath.Join(svc.RunDir, name+".removed.jsonl"), removed); err != nil {
		return fmt.Errorf("audit: write removed list: %w", err)
	}
	return unknownErr
}
