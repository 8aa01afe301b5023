package pack

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/neighbors"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Options are the settings of the pack stage.
type Options struct {
	neighbors.Config `yaml:",inline"`
	// Answer has the writer model answer each packed dialogue turn by turn,
	// running each answer's code in the sandbox. Without it (or without a
	// model) packed dialogues hold only the user turns, ready for simulate.
	Answer bool `yaml:"answer" json:"answer"`
	// Endpoint is the writer's endpoint in the `model:` section.
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Concurrency bounds dialogues answered at once.
	Concurrency int `yaml:"concurrency" json:"concurrency" key:"-"`
	// Language of the answers' code blocks and of the sandbox runner.
	Language string `yaml:"language" json:"language"`
	// Timeout bounds each execution (0 = the sandbox default).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// Validate implements pipeline.Validator.
func (o Options) Validate() error {
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Concurrency < 1 {
		return errors.New("pack: concurrency must be >= 1")
	}
	switch executors.Language(o.Language) {
	case executors.Python, executors.Bash, executors.SQL:
	default:
		return fmt.Errorf("pack: language %q: want python, bash or sql", o.Language)
	}
	return nil
}

func init() {
	pipeline.Register("pack", Options{Config: neighbors.DefaultConfig, Concurrency: 8, Language: "python"}, newStage)
}

type version struct {
	Embedder string `json:"embedder"`
	Writer   any    `json:"writer,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
}

func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	tmpl, err := prompts.Get("pack_writer")
	if err != nil {
		return nil, err
	}
	ver := version{Embedder: embed.Identity(svc.Embedder)}
	if o.Answer {
		ver.Prompt = tmpl.Version
		if ver.Writer, err = svc.ModelKey(o.Endpoint); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
	}
	return &stage{o: o, svc: svc, tmpl: tmpl, ver: ver}, nil
}

// stage is the "pack" stage.
type stage struct {
	o    Options
	svc  *pipeline.Services
	tmpl prompts.Template
	ver  version
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.ver }

// UsesExecutor implements pipeline.ExecutorUser: answered turns' code runs.
func (st *stage) UsesExecutor() bool { return st.o.Answer }

// UsesModel implements pipeline.ModelUser.
func (st *stage) UsesModel() bool { return st.o.Answer && st.svc.Model != nil }

// All implements pipeline.AllStage.
func (st *stage) All(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	return run(ctx, st.o, st.svc, st.tmpl, in, emit)
}

func run(ctx context.Context, o Options, svc *pipeline.Services, tmpl prompts.Template,
	in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	// The stage keeps each query's item as it came (to pass leftovers
	// through unchanged) and its text, not the decoded record: on large
	// sets the records, like dense vectors, would cost more memory than
	// the search itself.
	var items []pipeline.Item
	var texts []string
	kinds := map[string]int{}
	for it, err := range in {
		if err != nil {
			return err
		}
		if it.Kind != pipeline.KindQuery {
			kinds[it.Kind]++
			if err := emit(it); err != nil { // other records pass through
				return err
			}
			continue
		}
		var q struct {
			Text string `json:"text"`
		}
		if err := it.Decode(&q); err != nil {
			return err
		}
		items, texts = append(items, it), append(texts, q.Text)
	}
	svc.Stats.Set("queries", float64(len(items)))
	if len(items) == 0 {
		n := 0
		for _, c := range kinds {
			n += c
		}
		if n > 0 {
			pipeline.PassThrough(svc, "no_queries", float64(n), fmt.Sprintf("none of its input items is a query (%s), so nothing was packed "+
				"(records with tests are problems; to pack instruction/output pairs import them as queries: `as: query` on the input, or `import --as query`)", kindList(kinds)))
		}
		return nil
	}
	emb, err := embed.ForStage(svc)
	if err != nil {
		return fmt.Errorf("pack: embedder: %w", err)
	}
	start := time.Now()
	svc.Phase(fmt.Sprintf("embedding %d queries", len(texts)))
	vecs, err := embedAll(ctx, emb, texts)
	if err != nil {
		return fmt.Errorf("pack: embed: %w", err)
	}
	svc.Stats.Set("seconds/embed", time.Since(start).Seconds())
	svc.Phase("searching neighbours and grouping")
	res, err := neighbors.PackVectors(ctx, vecs, o.Config)
	if err != nil {
		return err
	}
	svc.Stats.Set("seconds/search", res.SearchSeconds)
	svc.Stats.Set("index/"+res.Method, 1)
	if res.Recall >= 0 {
		svc.Stats.Set(fmt.Sprintf("recall@%d_sample", o.K), res.Recall)
	}
	svc.Stats.Set("cos/within", res.CosWithin)
	svc.Stats.Set("cos/random", res.CosRandom)
	svc.Stats.Set("leftovers", float64(len(res.Leftovers)))
	for _, g := range res.Groups {
		svc.Stats.Add("groups/"+strconv.Itoa(len(g)), 1)
	}

	dialogues := make([]schema.Dialogue, len(res.Groups))
	for i, g := range res.Groups {
		dialogues[i] = packed(items, texts, vecs, g)
	}
	if o.Answer {
		svc.Phase(fmt.Sprintf("answering %d dialogues", len(dialogues)))
		if err := answerAll(ctx, o, svc, tmpl, dialogues, items, res.Groups); err != nil {
			return err
		}
	}
	for _, d := range dialogues {
		it, err := pipeline.DialogueItem(d)
		if err != nil {
			return err
		}
		if err := emit(it); err != nil {
			return err
		}
	}
	for _, i := range res.Leftovers { // single-turn: the query as it came
		if err := emit(items[i]); err != nil {
			return err
		}
	}
	return nil
}

// kindList renders item counts by kind: "34 problem, 2 dialogue".
func kindList(kinds map[string]int) string {
	var parts []string
	for k, n := range kinds {
		parts = append(parts, strconv.Itoa(n)+" "+k)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// embedChunk is how many texts are embedded at once: each chunk's dense
// vectors are turned into the compact set before the next is made.
const embedChunk = 8192

// embedAll embeds texts chunk by chunk into a vector set. An unfitted
// TF-IDF embedder is first fitted on all the texts, as one Embed call
// would do, so chunking does not change the vectors.
func embedAll(ctx context.Context, emb embed.Embedder, texts []string) (*neighbors.Vectors, error) {
	if tf, ok := emb.(*embed.TFIDF); ok {
		if fitted, _ := tf.Fitted(); !fitted {
			tf.Fit(texts)
		}
	}
	var vecs *neighbors.Vectors
	for lo := 0; lo < len(texts); lo += embedChunk {
		hi := min(lo+embedChunk, len(texts))
		d, err := emb.Embed(ctx, texts[lo:hi])
		if err != nil {
			return nil, err
		}
		if len(d) != hi-lo {
			return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(d), hi-lo)
		}
		if vecs == nil {
			vecs = neighbors.NewVectors(len(d[0]))
		}
		for _, v := range d {
			if len(v) != vecs.Dim() {
				return nil, fmt.Errorf("embedder returned vectors of %d and %d dimensions", vecs.Dim(), len(v))
			}
		}
		vecs.Append(d)
	}
	return vecs, nil
}

// packed is the unanswered dialogue of a group: its queries as user turns.
func packed(items []pipeline.Item, texts []string, vecs *neighbors.Vectors, g []int) schema.Dialogue {
	d := schema.Dialogue{Stage: "pack", Method: "packed", Labels: map[string]string{"turns": strconv.Itoa(len(g))}}
	sum := 0.0
	for k, i := range g {
		d.Messages = append(d.Messages, schema.Message{Role: schema.RoleUser, Content: texts[i]})
		d.Sources = append(d.Sources, items[i].ID)
		if k > 0 {
			sum += float64(vecs.Dot(g[0], i))
		}
	}
	d.Labels["seed_similarity"] = strconv.FormatFloat(sum/float64(len(g)-1), 'f', 3, 64)
	d.ID = schema.DialogueID(d.Messages)
	return d
}

// answerAll answers the dialogues in place, o.Concurrency at a time. Each
// dialogue is a unit under the engine's per-item rules (pipeline.Retry): a
// transient model or sandbox error is retried up to the stage's `retries`;
// a dialogue that still fails is a failed unit, never an unanswered
// dialogue in the output: the stage then fails with its dead letters and
// is not cached, and the next run answers it again. A spent budget or a
// cancelled run stops the stage at once.
func answerAll(ctx context.Context, o Options, svc *pipeline.Services, tmpl prompts.Template,
	dialogues []schema.Dialogue, items []pipeline.Item, groups [][]int) error {
	writer, err := llm.ForStage(svc, o.Endpoint)
	if errors.Is(err, llm.ErrNoModel) {
		if svc.Logger != nil {
			svc.Logger.Warn("pack: answer is on but there is no model, so packed dialogues hold only the user turns; to answer them " + llm.NoModelHint)
		}
		svc.Stats.Set("answer_skipped_no_model", float64(len(dialogues)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("pack: writer: %w", err)
	}
	var ex executors.Executor
	if svc.Executor != nil {
		if ex, err = svc.Executor(ctx); err != nil {
			return fmt.Errorf("pack: open sandbox: %w", err)
		}
	} else if svc.Logger != nil {
		svc.Logger.Warn("pack: no `executor:` in the pipeline file, so answers are not run; add e.g. executor: bwrap://")
	}
	system, err := tmpl.Render(map[string]any{"Language": o.Language})
	if err != nil {
		return err
	}
	w := &Writer{Chat: writer, Exec: ex, System: system, Language: executors.Language(o.Language), Timeout: o.Timeout}
	var failed pipeline.Failures
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for i := range dialogues {
		g.Go(func() error {
			turns := make([]schema.Query, len(groups[i]))
			for k, qi := range groups[i] {
				q, err := pipeline.As[schema.Query](items[qi], pipeline.KindQuery)
				if err != nil {
					return err
				}
				turns[k] = q
			}
			var d schema.Dialogue
			attempts, err := pipeline.Retry(gctx, svc, dialogues[i].ID, func(ctx context.Context) (err error) {
				d, err = w.Answer(ctx, turns)
				return err
			})
			switch {
			case errors.Is(err, llm.ErrBudgetExceeded) || gctx.Err() != nil:
				return err
			case err != nil:
				failed.Add(dialogues[i].ID, attempts, err)
				svc.Stats.Add("answer_failed", 1)
				return nil
			}
			d.Labels["seed_similarity"] = dialogues[i].Labels["seed_similarity"]
			dialogues[i] = d
			svc.Stats.Add("answered", 1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := failed.Err(svc); err != nil {
		return fmt.Errorf("pack: answering: %w", err)
	}
	return nil
}

// Writer answers a packed dialogue turn by turn. Safe for concurrent use.
type Writer struct {
	Chat     llm.Chatter
	Exec     executors.Executor // nil: answers are not run
	System   string
	Language executors.Language
	Timeout  time.Duration
}

// maxOutput bounds the execution output shown to the model and kept in the
// turn's content (the full streams stay in the Execution record).
const maxOutput = 4000

// Answer asks the writer each query in turn with the previous turns (and
// execution results) in context. Each answer's first code block in the
// language is run and its output kept as an execution turn.
func (w *Writer) Answer(ctx context.Context, turns []schema.Query) (schema.Dialogue, error) {
	conv := []llm.Message{llm.System(w.System)}
	d := schema.Dialogue{Stage: "pack", Method: "packed-answered", Labels: map[string]string{"turns": strconv.Itoa(len(turns))}}
	ran, failed := 0, 0
	for _, q := range turns {
		conv = append(conv, llm.User(q.Text))
		resp, err := w.Chat.Chat(ctx, llm.Request{Messages: conv})
		if err != nil {
			return schema.Dialogue{}, err
		}
		if d.Model == "" {
			d.Model = resp.Model
		}
		conv = append(conv, llm.Assistant(resp.Text))
		d.Sources = append(d.Sources, q.ID)
		d.Messages = append(d.Messages,
			schema.Message{Role: schema.RoleUser, Content: q.Text},
			schema.Message{Role: schema.RoleAssistant, Content: resp.Text})
		code, err := parse.Code(resp.Text, string(w.Language))
		if err != nil || w.Exec == nil {
			continue
		}
		e, err := w.run(ctx, code)
		if err != nil {
			return schema.Dialogue{}, err
		}
		ran++
		if e.ExitCode != 0 || e.TimedOut || e.OOM {
			failed++
		}
		out := render(e)
		d.Messages = append(d.Messages, schema.Message{Role: schema.RoleExecution, Content: out, Exec: &e})
		conv = append(conv, llm.User(schema.ExecutionPrefix+out))
	}
	d.Labels["executions"] = strconv.Itoa(ran)
	d.Labels["failed_executions"] = strconv.Itoa(failed)
	d.ID = schema.DialogueID(d.Messages)
	return d, nil
}

func (w *Writer) run(ctx context.Context, code string) (schema.Execution, error) {
	req := executors.Request{Language: w.Language, Code: code, Limits: executors.Limits{Timeout: w.Timeout}}
	at := time.Now().UTC()
	r, err := w.Exec.Run(ctx, req)
	if err != nil {
		return schema.Execution{}, fmt.Errorf("pack: sandbox: %w", err)
	}
	info := w.Exec.Info()
	return schema.Execution{Language: string(w.Language), Code: code, Driver: info.Driver, Image: info.Image,
		TimeoutMS: w.Timeout.Milliseconds(), MemoryB: info.Limits.MemoryBytes, ExitCode: r.ExitCode,
		TimedOut: r.TimedOut, TimeLimit: r.TimeLimit, OOM: r.OOM, Exception: r.Exception, ErrorLine: r.ErrorLine,
		Stdout: r.Stdout, Stderr: r.Stderr, Duration: r.Duration, ExecutedAt: at}, nil
}

// render is what the model and the reader see of a run.
func render(e schema.Execution) string {
	var b strings.Builder
	b.WriteString(e.Stdout)
	if e.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(e.Stderr)
	}
	switch {
	case e.TimedOut:
		b.WriteString("\n[timed out]")
	case e.OOM:
		b.WriteString("\n[out of memory]")
	}
	s := b.String()
	if len(s) > maxOutput {
		s = s[:maxOutput] + "\n[output truncated]"
	}
	if strings.TrimSpace(s) == "" {
		s = "[no output]"
	}
	return s
}

// Estimate implements pipeline.Estimator: queries grouped in the configured
// sizes in turn (queries left without a close enough neighbour stay single;
// the estimate assumes none is), and with Answer one writer call per turn,
// its prompt the writer template and the dialogue so far.
func (st *stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	var u pipeline.Usage
	var out []pipeline.Shape
	var queries []pipeline.Shape
	for _, sh := range in {
		if sh.Kind == pipeline.KindQuery {
			queries = append(queries, sh)
		} else {
			out = append(out, sh)
		}
	}
	const answerBytes = 600 // a plan and a short program
	for i, k := 0, 0; i < len(queries); k++ {
		n := min(st.o.Sizes[k%len(st.o.Sizes)], len(queries)-i)
		d := pipeline.Shape{Kind: pipeline.KindDialogue, UserTurns: n}
		for _, q := range queries[i : i+n] {
			d.Bytes += q.Bytes
			if st.UsesModel() {
				u = u.Add(pipeline.Calls(1, len(st.tmpl.Text)+d.Bytes, answerBytes/4))
				d.Bytes += answerBytes
				d.CodeTurns++
			}
		}
		if n == 1 {
			d = queries[i]
		}
		out = append(out, d)
		i += n
	}
	return u, out
}
