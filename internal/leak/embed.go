package leak

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// ParaphraseDim is the dimension of the built-in TF-IDF embedder the
// paraphrase check uses when none is configured: at the pipeline's default
// 384, word features of 1,138 statements collide and a reworded statement's
// own task ranked far lower (measured on the planted paraphrases).
const ParaphraseDim = 4096

// DefaultEmbedThreshold is the cosine similarity at or above which the
// paraphrase check flags a dialogue turn against a task statement when no
// judge is configured. With the default TF-IDF embedder, a reworded
// statement often scores far lower; with a judge, the nearest statements
// go to the judge instead (see ParaphraseOptions).
const DefaultEmbedThreshold = 0.6

// ParaphraseOptions set the two-step paraphrase check (as llm-decontaminator
// does it): every user and assistant turn of a dialogue, with its code
// removed, is compared on its own with every task statement (the problem
// without its code and examples). Without a judge, a turn whose embedding
// has a cosine at or above Threshold with a statement is a finding. With
// one, each turn's TopK nearest statements at or above Floor are ranked
// (by the configured embedder; when that is the built-in TF-IDF, its
// list and the lexical retriever lexIndex's, which ranks most rewordings
// far better, interleaved: each finds rewordings the other ranks low), TopK
// of them per dialogue are picked round by round over the turns, user
// turns first (see candidates), and the judge decides for each whether it
// is the same task.
type ParaphraseOptions struct {
	Threshold float64 `json:"embed_threshold"`
	TopK      int     `json:"top_k"` // candidates per dialogue sent to the judge (default 10)
	Floor     float64 `json:"floor"` // least cosine (or BM25 share) of a judged candidate (default 0.1)
	// Judge, when set, decides same task or not; it is asked once per
	// (statement, turn) pair and its answers are cached by the client.
	// Before the audit trusts it, it answers the labelled pairs of
	// judge_calibration.jsonl; below MinAgreement, EnableParaphrase fails
	// with the figure (ErrJudgeUntrusted).
	Judge llm.Chatter `json:"-"`
	// MinAgreement is the least share of the calibration pairs the judge
	// must answer right (default DefaultMinAgreement).
	MinAgreement float64 `json:"min_agreement,omitempty"`
}

// DefaultMinAgreement is the share of the labelled calibration pairs a
// judge must get right to be trusted.
const DefaultMinAgreement = 0.8

// ErrJudgeUntrusted means the judge failed its calibration: its answers
// would decide nothing reliably, so the audit does not run on them.
var ErrJudgeUntrusted = errors.New("paraphrase judge failed its calibration")

// JudgeReport is what the paraphrase judge did, for the report: a judge
// that fails closed shows its unreadable answers here, never as
// "different".
type JudgeReport struct {
	// Calibration: labelled pairs answered right, of all.
	CalibrationAgreed int `json:"calibration_agreed"`
	CalibrationPairs  int `json:"calibration_pairs"`
	// Pairs judged during the audit, called the same task, and answered
	// in no readable form even after one repair request.
	Pairs   int64 `json:"pairs"`
	Same    int64 `json:"same"`
	Unknown int64 `json:"unknown"`
	// UnknownPairs lists the (dialogue, task) pairs of the unknown
	// answers (at most maxUnknownListed).
	UnknownPairs []schema.Finding `json:"unknown_pairs,omitempty"`
}

// maxUnknownListed bounds JudgeReport.UnknownPairs.
const maxUnknownListed = 100

//go:embed judge_calibration.jsonl
var calibrationFile string

// CalibrationPair is one labelled pair the judge must answer right.
type CalibrationPair struct {
	Statement string `json:"statement"`
	Turn      string `json:"turn"`
	Same      bool   `json:"same"`
}

// CalibrationPairs returns the labelled pairs the judge is calibrated on
// (written for the audit, on tasks of no benchmark).
func CalibrationPairs() []CalibrationPair {
	var out []CalibrationPair
	for _, l := range strings.Split(strings.TrimSpace(calibrationFile), "\n") {
		var p CalibrationPair
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			panic(fmt.Sprintf("leak: judge_calibration.jsonl: %v", err)) // embedded, checked by a test
		}
		out = append(out, p)
	}
	return out
}

// DefaultParaphraseTopK is the number of candidates per dialogue the
// judge sees by default.
const DefaultParaphraseTopK = 10

// embedIndex holds the unit vectors of every benchmark task's statement.
type embedIndex struct {
	e          embed.Embedder
	o          ParaphraseOptions
	statements [][]string    // per benchmark, per task
	vecs       [][][]float32 // per benchmark, per task
	tmpl       prompts.Template
	lex        *lexIndex // candidate retrieval for the judge when the embedder is the built-in TF-IDF
	// Judge counters, for the report and the stage's stats.
	judged, same, unreadable atomic.Int64
	calAgreed, calPairs      int
	unknownMu                sync.Mutex
	unknown                  []schema.Finding
}

// EnableEmbedding turns on the paraphrase check without a judge: a turn is
// flagged against a task when their cosine is at least threshold
// (DefaultEmbedThreshold if <= 0).
func (a *Auditor) EnableEmbedding(ctx context.Context, e embed.Embedder, threshold float64) error {
	return a.EnableParaphrase(ctx, e, ParaphraseOptions{Threshold: threshold})
}

// EnableParaphrase turns on the paraphrase check (see ParaphraseOptions).
// Every task's statement is embedded now, in one call, so an unfitted
// embed.TFIDF learns its IDF from the benchmarks. Call it before Run; it is
// not safe to call concurrently with Run.
func (a *Auditor) EnableParaphrase(ctx context.Context, e embed.Embedder, o ParaphraseOptions) error {
	if o.Threshold <= 0 {
		o.Threshold = DefaultEmbedThreshold
	}
	if o.TopK <= 0 {
		o.TopK = DefaultParaphraseTopK
	}
	if o.Floor <= 0 {
		o.Floor = 0.1
	}
	if o.MinAgreement <= 0 {
		o.MinAgreement = DefaultMinAgreement
	}
	ix := &embedIndex{e: e, o: o}
	if o.Judge != nil {
		t, err := prompts.Get("audit_same_task")
		if err != nil {
			return err
		}
		ix.tmpl = t
		if err := ix.calibrate(ctx); err != nil {
			return err
		}
	}
	var texts []string
	for _, x := range a.indexes {
		ix.statements = append(ix.statements, x.statements)
		texts = append(texts, x.statements...)
	}
	// With a judge, the built-in embedder's job is only to rank, beside
	// the lexical retriever (see lexIndex), which ranks most reworded
	// statements' tasks higher; the two lists are interleaved (perTurn).
	// The threshold-only mode keeps the TF-IDF cosines its threshold was
	// measured with.
	if _, ok := e.(*embed.TFIDF); ok && o.Judge != nil {
		ix.lex = newLexIndex(ix.statements)
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("audit: embed benchmark statements: %w", err)
	}
	if len(vs) != len(texts) {
		return fmt.Errorf("audit: embedder returned %d vectors for %d statements", len(vs), len(texts))
	}
	for _, x := range a.indexes {
		ix.vecs = append(ix.vecs, vs[:len(x.statements)])
		vs = vs[len(x.statements):]
	}
	a.emb = ix
	a.opts.EmbedThreshold = o.Threshold
	a.opts.Judged = o.Judge != nil
	return nil
}

// JudgeCounts returns how many candidate pairs the judge saw, how many it
// called the same task, and how many answers could not be read even after
// a repair request (unknown: neither same nor different).
func (a *Auditor) JudgeCounts() (judged, same, unknown int64) {
	if a.emb == nil {
		return 0, 0, 0
	}
	return a.emb.judged.Load(), a.emb.same.Load(), a.emb.unreadable.Load()
}

// Judge returns the judge's report, or nil without a judge.
func (a *Auditor) Judge() *JudgeReport {
	if a.emb == nil || a.emb.o.Judge == nil {
		return nil
	}
	ix := a.emb
	ix.unknownMu.Lock()
	defer ix.unknownMu.Unlock()
	return &JudgeReport{CalibrationAgreed: ix.calAgreed, CalibrationPairs: ix.calPairs,
		Pairs: ix.judged.Load(), Same: ix.same.Load(), Unknown: ix.unreadable.Load(),
		UnknownPairs: slices.Clone(ix.unknown)}
}

// calibrate asks the judge about the labelled pairs and fails with
// ErrJudgeUntrusted below the agreement threshold. An unreadable answer
// counts as wrong.
func (ix *embedIndex) calibrate(ctx context.Context) error {
	pairs := CalibrationPairs()
	agreed := 0
	var wrong []string
	for i, p := range pairs {
		v, _, err := ix.ask(ctx, p.Statement, p.Turn)
		if err != nil {
			return fmt.Errorf("paraphrase judge calibration: %w", err)
		}
		if v == "same" && p.Same || v == "different" && !p.Same {
			agreed++
		} else if len(wrong) < 3 {
			if v == "" {
				v = "unreadable"
			}
			wrong = append(wrong, fmt.Sprintf("pair %d (want same=%v): %s", i+1, p.Same, v))
		}
	}
	ix.calAgreed, ix.calPairs = agreed, len(pairs)
	if share := float64(agreed) / float64(len(pairs)); share < ix.o.MinAgreement {
		return fmt.Errorf("audit: %w: agreed with %d of %d labelled pairs (%.0f%%, want >= %.0f%%; %s)",
			ErrJudgeUntrusted, agreed, len(pairs), 100*share, 100*ix.o.MinAgreement, strings.Join(wrong, "; "))
	}
	return nil
}

// statementText is a task's statement without its code: MBPP's text as it
// is; for a prompt holding a signature (HumanEval), its docstrings without
// the doctest examples.
func statementText(p *schema.Problem) string {
	doc := promptDocstrings(p)
	if doc == "" {
		if p.Text != "" && !strings.Contains(p.Text, "def ") {
			return p.Text
		}
		doc = stripCode(p.Text)
	}
	var b strings.Builder
	example := false
	for _, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, ">>>"):
			example = true
			continue
		case t == "":
			example = false
		case example:
			continue // the expected output of a doctest
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

// stripCode removes fenced blocks and code-like lines from a turn, leaving
// its prose for the paraphrase check.
func stripCode(text string) string {
	var b strings.Builder
	in := false
	var fence string
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if !in {
			if f := fenceOf(t); f != "" {
				in, fence = true, f
				continue
			}
		} else {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				in = false
			}
			continue
		}
		// codeLike(t) is codeLikeLines(t) != "" for one line, without
		// building the string.
		if t == "" || codeLike(t) && !proseLike(t) {
			continue
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

// minTurnWords is the least number of words a turn's prose needs to be
// compared with the statements ("Thanks!" is not a task).
const minTurnWords = 5

type candidate struct {
	bench, task int
	turn        int
	cos         float32 // the cosine, or the BM25 share when lexical
	lexical     bool    // ranked by lexIndex
}

// check compares each user and assistant turn of the dialogue (code
// removed) with every task statement and adds findings: without a judge,
// the pairs at or above the cosine threshold; with one, those the judge
// calls the same task among the TopK candidates (see candidates).
func (ix *embedIndex) check(ctx context.Context, d *schema.Dialogue, id string, r *Result, indexes []*Index) error {
	var turns []string
	var at []int
	var user []bool
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.Role != schema.RoleUser && m.Role != schema.RoleAssistant {
			continue
		}
		p := stripCode(m.Content)
		if len(strings.Fields(p)) < minTurnWords {
			continue
		}
		turns = append(turns, p)
		at = append(at, i)
		user = append(user, m.Role == schema.RoleUser)
	}
	if len(turns) == 0 {
		return nil
	}
	if ix.o.Judge == nil {
		return ix.threshold(ctx, id, turns, at, r, indexes)
	}
	lists, err := ix.perTurn(ctx, turns)
	if err != nil {
		return err
	}
	for _, c := range candidates(lists, user, ix.o.TopK) {
		verdict, why, err := ix.judge(ctx, ix.statements[c.bench][c.task], turns[c.turn])
		if err != nil {
			return err
		}
		if verdict == "" {
			ix.unknownMu.Lock()
			if len(ix.unknown) < maxUnknownListed {
				ix.unknown = append(ix.unknown, ix.finding(id, indexes, c, at, turns, "judge: no readable answer after a repair request"))
			}
			ix.unknownMu.Unlock()
		}
		if verdict == "same" {
			r.Findings = append(r.Findings, ix.finding(id, indexes, c, at, turns, fmt.Sprintf("judge: same task as turn %d (%s %.3f): %s", at[c.turn], c.scoreName(), c.cos, why)))
		}
	}
	return nil
}

func (c candidate) scoreName() string {
	if c.lexical {
		return "BM25 share"
	}
	return "cosine"
}

// perTurn returns each turn's TopK nearest statements at or above the
// floor, best first.
func (ix *embedIndex) perTurn(ctx context.Context, turns []string) ([][]candidate, error) {
	k := ix.o.TopK
	lists := make([][]candidate, len(turns))
	var lex [][]candidate
	if ix.lex != nil {
		lex = make([][]candidate, len(turns))
		acc := make([]float32, len(ix.lex.docs))
		var terms []lexTerm
		for ti, t := range turns {
			for _, h := range ix.lex.nearest(t, k, acc, terms) {
				if h.rel < float32(ix.o.Floor) {
					continue
				}
				doc := ix.lex.docs[h.doc]
				lex[ti] = append(lex[ti], candidate{bench: int(doc.bench), task: int(doc.task), turn: ti, cos: h.rel, lexical: true})
			}
		}
	}
	vs, err := ix.embed(ctx, turns)
	if err != nil {
		return nil, err
	}
	for ti, v := range vs {
		var all []candidate
		for bi, tasks := range ix.vecs {
			for t, tv := range tasks {
				if c := embed.Dot(v, tv); c >= float32(ix.o.Floor) {
					all = append(all, candidate{bench: bi, task: t, turn: ti, cos: c})
				}
			}
		}
		sortCandidates(all)
		lists[ti] = all[:min(k, len(all))]
		if lex != nil {
			lists[ti] = interleave(lex[ti], lists[ti])
		}
	}
	return lists, nil
}

// candidates picks at most k distinct tasks from the turns' ranked lists,
// round by round: the best of every user turn, then of every assistant
// turn, then the second best of each, and so on. A long dialogue thus
// spends the judge's calls on each turn's best matches rather than on one
// turn's tail, and a request (a user turn) goes before an answer.
func candidates(lists [][]candidate, user []bool, k int) []candidate {
	var out []candidate
	seen := map[[2]int]bool{}
	for rank := 0; len(out) < k; rank++ {
		more := false
		for _, wantUser := range []bool{true, false} {
			for ti, l := range lists {
				if user[ti] != wantUser || rank >= len(l) {
					continue
				}
				more = true
				c := l[rank]
				if key := [2]int{c.bench, c.task}; !seen[key] && len(out) < k {
					seen[key] = true
					out = append(out, c)
				}
			}
		}
		if !more {
			break
		}
	}
	return out
}

// interleave merges two ranked lists of one turn, a's first, then b's
// first, and so on, each task once.
func interleave(a, b []candidate) []candidate {
	out := make([]candidate, 0, len(a)+len(b))
	seen := map[[2]int]bool{}
	for i := range max(len(a), len(b)) {
		for _, l := range [][]candidate{a, b} {
			if i < len(l) {
				if key := [2]int{l[i].bench, l[i].task}; !seen[key] {
					seen[key] = true
					out = append(out, l[i])
				}
			}
		}
	}
	return out
}

func sortCandidates(cands []candidate) {
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].cos != cands[j].cos {
			return cands[i].cos > cands[j].cos
		}
		if cands[i].bench != cands[j].bench {
			return cands[i].bench < cands[j].bench
		}
		return cands[i].task < cands[j].task
	})
}

func (ix *embedIndex) embed(ctx context.Context, turns []string) ([][]float32, error) {
	vs, err := ix.e.Embed(ctx, turns)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(turns) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vs), len(turns))
	}
	return vs, nil
}

// threshold adds a finding for each task whose statement's cosine with
// some turn is at least the threshold (the best turn per task).
func (ix *embedIndex) threshold(ctx context.Context, id string, turns []string, at []int, r *Result, indexes []*Index) error {
	vs, err := ix.embed(ctx, turns)
	if err != nil {
		return err
	}
	best := map[[2]int]candidate{}
	for ti, v := range vs {
		for bi, tasks := range ix.vecs {
			for t, tv := range tasks {
				c := embed.Dot(v, tv)
				k := [2]int{bi, t}
				if c >= float32(ix.o.Threshold) && c > best[k].cos {
					best[k] = candidate{bench: bi, task: t, turn: ti, cos: c}
				}
			}
		}
	}
	cands := make([]candidate, 0, len(best))
	for _, c := range best {
		cands = append(cands, c)
	}
	sortCandidates(cands)
	for _, c := range cands {
		r.Findings = append(r.Findings, ix.finding(id, indexes, c, at, turns, fmt.Sprintf("cosine %.3f between turn %d (code removed) and the task statement", c.cos, at[c.turn])))
	}
	return nil
}

func (ix *embedIndex) finding(id string, indexes []*Index, c candidate, at []int, turns []string, ev string) schema.Finding {
	return schema.Finding{
		DialogueID: id, Benchmark: indexes[c.bench].name, TaskID: indexes[c.bench].tasks[c.task].id, Method: MethodEmbedding,
		Score: float64(c.cos), Evidence: ev,
	}
}

// maxJudgeChars bounds each text shown to the judge.
const maxJudgeChars = 4000

// judge asks whether statement and turn are the same task and counts the
// answer: "same", "different", or "" (unknown: unreadable even after a
// repair request). An unknown answer is never taken as "different".
func (ix *embedIndex) judge(ctx context.Context, statement, turn string) (string, string, error) {
	ix.judged.Add(1)
	v, why, err := ix.ask(ctx, statement, turn)
	if err != nil {
		return "", "", err
	}
	switch v {
	case "same":
		ix.same.Add(1)
	case "":
		ix.unreadable.Add(1)
	}
	return v, why, nil
}

// repairRequest is sent after an answer that starts with neither word.
const repairRequest = `Your answer did not start with "same" or "different". Reply with exactly one word: same or different.`

// ask renders the prompt, asks the judge and reads its verdict; an
// unreadable answer is asked once more, with the answer and repairRequest
// in the conversation.
func (ix *embedIndex) ask(ctx context.Context, statement, turn string) (string, string, error) {
	msg, err := ix.tmpl.Render(map[string]string{"Statement": clip(statement, maxJudgeChars), "Turn": clip(turn, maxJudgeChars)})
	if err != nil {
		return "", "", err
	}
	req := llm.Request{Messages: []llm.Message{llm.User(msg)}, Params: llm.Params{Temperature: ptr(0.0)}}
	resp, err := ix.o.Judge.Chat(ctx, req)
	if err != nil {
		return "", "", fmt.Errorf("paraphrase judge: %w", err)
	}
	if v, why := readVerdict(resp.Text); v != "" {
		return v, why, nil
	}
	req.Messages = append(req.Messages, llm.Assistant(resp.Text), llm.User(repairRequest))
	resp, err = ix.o.Judge.Chat(ctx, req)
	if err != nil {
		return "", "", fmt.Errorf("paraphrase judge: %w", err)
	}
	v, why := readVerdict(resp.Text)
	return v, why, nil
}

// readVerdict reads the answer's first word, "same" or "different", and
// the reason after it.
func readVerdict(ans string) (string, string) {
	f := strings.FieldsFunc(strings.ToLower(ans), func(r rune) bool { return !unicode.IsLetter(r) })
	if len(f) == 0 {
		return "", ""
	}
	why := strings.TrimSpace(ans)
	if k := strings.IndexFunc(why, func(r rune) bool { return !unicode.IsLetter(r) && r != '*' }); k > 0 {
		why = strings.TrimLeft(why[k:], " .,:;-—*\n")
	}
	why = clip(why, 200)
	switch f[0] {
	case "same", "different":
		return f[0], why
	}
	return "", ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}

func ptr[T any](v T) *T { return &v }

// stopWords are dropped by the lexical retriever (lexTerms): words any
// request uses.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to in on for and or is are be that this it its with as by from at into
		write function python code program please i we you me my your can could would should will given return returns which
		what how get put some each every one any all than then there their them they do does out`) {
		m[w] = true
	}
	return m
}()

func stem(w string) string {
	if len(w) <= 4 {
		return w
	}
	for _, s := range [...]struct{ suf, rep string }{{"ies", "y"}, {"sses", "ss"}, {"ing", ""}, {"ed", ""}, {"es", ""}, {"s", ""}} {
		if strings.HasSuffix(w, s.suf) && len(w)-len(s.suf) >= 3 {
			if s.suf == "s" && strings.HasSuffix(w, "ss") {
				return w
			}
			return w[:len(w)-len(s.suf)] + s.rep
		}
	}
	return w
}
