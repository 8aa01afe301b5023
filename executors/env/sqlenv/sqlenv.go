// Package sqlenv is InterCode's SQL environment (Spider, BIRD, WikiSQL): the
// agent's statements run on a fresh copy of the task's database, and
// `submit` scores the rows of its last statement against the gold query's
// rows on a pristine copy: intersection over union of the row multisets,
// times Kendall's tau of the common rows' order.
//
// Two backends: "sqlite" (default: no set-up; InterCode's MySQL dumps are
// converted once to one SQLite file per database, and a fresh copy per
// episode is an in-memory deserialize inside the sandbox) and "mariadb" (a
// real MySQL-compatible server for exact MySQL semantics, see mariadb.go).
//
// Registers the "sql" environment and the "spider", "bird" and "wikisql" loaders.
package sqlenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

func init() {
	env.Register("sql", func(ctx context.Context, ex executors.Executor, opts env.Options) (env.Env, error) {
		return New(ctx, ex, opts)
	})
	for _, d := range []string{"spider", "bird", "wikisql"} {
		env.RegisterLoader(d, "sql", loader(d))
	}
}

// result is one statement's outcome.
type result struct {
	Cols    []string `json:"cols"`
	Rows    [][]any  `json:"rows"`
	HasRows bool     `json:"has_rows"`
	Err     string   `json:"error"`
}

// decode turns the helper's tagged values ({"f": "1.5"}, {"b": base64})
// into Go values.
func (r *result) decode() {
	for _, row := range r.Rows {
		for i, v := range row {
			if n, ok := v.(json.Number); ok {
				if x, err := strconv.ParseInt(string(n), 10, 64); err == nil {
					row[i] = x
				}
				continue
			}
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			if f, ok := m["f"].(string); ok {
				x, _ := strconv.ParseFloat(f, 64)
				row[i] = x
			} else if b, ok := m["b"].(string); ok {
				x, _ := base64.StdEncoding.DecodeString(b)
				row[i] = x
			}
		}
	}
}

type backend interface {
	reset(ctx context.Context, dumpPath, db string) error
	exec(ctx context.Context, sql string) (result, error)
	gold(ctx context.Context, dumpPath, db, sql string) (result, error)
	close() error
}

// Env is the SQL environment. Not safe for concurrent use.
type Env struct {
	b       backend
	order   string // "ordered" (tau only when the gold has ORDER BY) or "always" (InterCode)
	task    env.Task
	last    *result // the last statement's rows: what submit scores
	gold    *result
	ep      env.Episode
	backend string
	// ties: accept any answer the gold's ORDER BY ... LIMIT allows (see
	// ties.go); tie is the current task's, computed at its first score.
	ties    bool
	tie     *tieSet
	tieDone bool
	tieNote string
	// goldEmpty: a gold that fails scores as an empty result, as
	// InterCode's does (then any empty answer scores 1); otherwise it
	// scores every answer 0 and says so (Info "gold_error").
	goldEmpty bool
}

// New opens the SQL environment. opts.Params: "backend" = sqlite (default)
// or mariadb; "dsn" for mariadb (default root over the local socket, see
// mariadb.go); "order" = ordered (default) or always; "statement_time"
// (default 10s); "ties" = any (default: an answer the gold's ORDER BY ...
// LIMIT allows through tied sort keys scores as the gold, ties.go) or gold
// (InterCode: only the rows the gold's run happened to return);
// "gold_errors" = fail (default: a gold that does not run scores every
// answer 0, Info "gold_error" says why) or empty (InterCode: it scores as
// an empty result, so any empty answer scores 1; WikiSQL's pseudo-SQL
// golds do that).
func New(ctx context.Context, ex executors.Executor, opts env.Options) (*Env, error) {
	p := opts.Params
	stmt := 10 * time.Second
	if s := p["statement_time"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("sqlenv: statement_time %q: %w", s, err)
		}
		stmt = d
	}
	cache := opts.CacheDir
	if cache == "" {
		cache = defaultCache()
	}
	e := &Env{order: p["order"], backend: p["backend"]}
	if e.order == "" {
		e.order = "ordered"
	}
	switch p["ties"] {
	case "", "any":
		e.ties = true
	case "gold":
	default:
		return nil, fmt.Errorf("sqlenv: ties %q (want any or gold)", p["ties"])
	}
	switch p["gold_errors"] {
	case "", "fail":
	case "empty":
		e.goldEmpty = true
	default:
		return nil, fmt.Errorf("sqlenv: gold_errors %q (want fail or empty)", p["gold_errors"])
	}
	if e.order != "ordered" && e.order != "always" {
		return nil, fmt.Errorf("sqlenv: order %q (want ordered or always)", e.order)
	}
	switch e.backend {
	case "", "sqlite":
		e.backend = "sqlite"
		lim := opts.Limits
		if lim.Timeout == 0 {
			lim.Timeout = stmt + 20*time.Second
		}
		e.b = newSQLite(ex, lim, cache, stmt)
	case "mariadb", "mysql":
		m, err := newMariaDB(ctx, p["dsn"], stmt)
		if err != nil {
			return nil, err
		}
		e.b = m
	default:
		return nil, fmt.Errorf("sqlenv: unknown backend %q (want sqlite or mariadb)", e.backend)
	}
	return e, nil
}

// Reset implements env.Env.
func (e *Env) Reset(ctx context.Context, t env.Task) (string, error) {
	db, dump := t.Setup[env.SetupDB], t.Setup[env.SetupDBFile]
	if db == "" || dump == "" {
		return "", fmt.Errorf("sqlenv: task %s: %w (setup %q and %q)", t.ID, errNoDB, env.SetupDB, env.SetupDBFile)
	}
	if err := e.b.reset(ctx, dump, db); err != nil {
		return "", fmt.Errorf("sqlenv: task %s: %w", t.ID, err)
	}
	e.task, e.last, e.gold = t, nil, nil
	e.ep.Begin()
	e.tie, e.tieDone, e.tieNote = nil, false, ""
	return t.Query, nil
}

// Step implements env.Env.
func (e *Env) Step(ctx context.Context, action string) (env.StepResult, error) {
	if r, handled, err := e.ep.Step("sqlenv", action, func(arg string) (env.StepResult, error) { return e.Score(ctx, arg) }); handled {
		return r, err
	}
	res, err := e.b.exec(ctx, action)
	if err != nil {
		return env.StepResult{}, fmt.Errorf("sqlenv: task %s: %w", e.task.ID, err)
	}
	e.last = &res
	if res.Err != "" {
		return env.StepResult{Observation: "Error executing query: " + res.Err, Info: map[string]any{"error": res.Err}}, nil
	}
	info := map[string]any{"columns": res.Cols, "rows": res.Rows}
	obs := ""
	if res.HasRows {
		obs = RenderTable(res.Cols, res.Rows, DefaultTableLimits)
		// What the table shows, as numbers: a closing turn states the
		// count from here, never from the rendered text.
		info[env.InfoRowCount] = len(res.Rows)
		info[env.InfoRowsShown] = ShownRows(len(res.Rows), DefaultTableLimits)
		if len(res.Rows) <= pyRowsMax {
			info[env.InfoPyRows] = PyRows(res.Rows)
		}
	}
	return env.StepResult{Observation: obs, Valid: true, Info: info}, nil
}

// Score implements env.Env: InterCode's reward for the last statement's rows.
func (e *Env) Score(ctx context.Context, _ string) (env.StepResult, error) {
	if !e.ep.Begun() {
		return env.StepResult{}, errors.New("sqlenv: Score before Reset")
	}
	if e.gold == nil {
		g, err := e.b.gold(ctx, e.task.Setup[env.SetupDBFile], e.task.Setup[env.SetupDB], e.task.Gold)
		if err != nil {
			return env.StepResult{}, fmt.Errorf("sqlenv: task %s: gold: %w", e.task.ID, err)
		}
		e.gold = &g
	}
	info := map[string]any{"corrupt_gold": e.gold.Err != ""}
	if e.gold.Err != "" {
		info[InfoGoldError] = e.gold.Err
	}
	var agentRows [][]any
	agentOK := e.last != nil && e.last.Err == "" && e.last.HasRows
	if agentOK {
		agentRows = e.last.Rows
	}
	applyTau := e.order == "always" || HasOrderBy(e.task.Gold)
	r := 0.0
	switch {
	case !agentOK:
	case e.gold.Err != "" && !e.goldEmpty:
		// A gold that does not run proves no answer right.
	default:
		// InterCode scores a failed gold query as an empty result.
		r = Reward(agentRows, e.gold.Rows, applyTau)
		if e.ties && e.gold.Err == "" {
			ts, err := e.tieSet(ctx)
			if err != nil {
				return env.StepResult{}, err
			}
			if ts != nil {
				info[InfoTies] = ts.alternatives()
				if r < 1 {
					r = max(r, Reward(agentRows, ts.goldFor(agentRows), applyTau))
				}
			}
		}
	}
	if e.tieNote != "" {
		info["ties_unchecked"] = e.tieNote
	}
	info["gold_rows"] = len(e.gold.Rows)
	info["rank_correlation_applied"] = applyTau
	return env.StepResult{Observation: "", Reward: r, Valid: true, Info: info}, nil
}

// Score's Info keys (env's).
const (
	InfoGoldError = env.InfoGoldError
	InfoTies      = env.InfoTies
)

// tieSet is the current gold's tied cut (nil: none, or not a cut gold),
// computed once per episode. A keyed query the engine refuses (an ORDER
// BY naming a select alias) leaves ties unchecked, noted in tieNote.
func (e *Env) tieSet(ctx context.Context) (*tieSet, error) {
	if e.tieDone {
		return e.tie, nil
	}
	e.tieDone = true
	lq, ok := parseLimitQuery(e.task.Gold)
	if !ok {
		return nil, nil
	}
	full, err := e.b.gold(ctx, e.task.Setup[env.SetupDBFile], e.task.Setup[env.SetupDB], lq.keyed())
	if err != nil {
		return nil, fmt.Errorf("sqlenv: task %s: gold's ties: %w", e.task.ID, err)
	}
	if full.Err != "" {
		e.tieNote = full.Err
		return nil, nil
	}
	e.tie = ties(full.Rows, len(full.Cols)-len(lq.keys), lq)
	return e.tie, nil
}

// Ties reports whether t's gold cuts its ordered rows where several share
// the sort key, and how many answers that allows; e must be reset to t.
// The gold self-check marks such tasks ambiguous.
func (e *Env) Ties(ctx context.Context) (int, error) {
	ts, err := e.tieSet(ctx)
	if err != nil || ts == nil {
		return 0, err
	}
	return ts.alternatives(), nil
}

// Close implements env.Env.
func (e *Env) Close() error { return e.b.close() }

var orderByRE = regexp.MustCompile(`(?i)\border\s+by\b`)

// HasOrderBy reports whether a query orders its rows (outside string literals).
func HasOrderBy(sql string) bool { return orderByRE.MatchString(stripStrings(sql)) }

func stripStrings(s string) string {
	var b strings.Builder
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if q != 0 {
			if c == q {
				q = 0
			}
			continue
		}
		if c == '\'' || c == '"' {
			q = c
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// RowKey is a row's identity for the reward: Python's str() of the row
// tuple as InterCode's mysql-connector cursor returns it, so that equal rows
// have equal keys and keys sort as InterCode's strings do (Kendall's tau
// compares them).
func RowKey(row []any) string {
	end := ")"
	if len(row) == 1 {
		end = ",)" // Python's one-element tuple
	}
	return pySeq("(", row, pyRepr, end)
}

// pySeq is Python's str() of a sequence: open, each element's repr
// separated by ", ", then end.
func pySeq[T any](open string, xs []T, repr func(T) string, end string) string {
	var b strings.Builder
	b.WriteString(open)
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(repr(x))
	}
	b.WriteString(end)
	return b.String()
}

// pyRowsMax bounds the rows Step renders as InterCode logged them.
const pyRowsMax = 200

// PyRows is rows as InterCode's SQL observation shows them: Python's str()
// of the list of row tuples mysql-connector returns ("[('a', 1)]"), so a
// replay can tell whether a statement gave here the rows it gave there.
func PyRows(rows [][]any) string {
	return pySeq("[", rows, RowKey, "]")
}

// Decimal is a DECIMAL value (MariaDB), shown as Python's Decimal('1.50').
type Decimal string

func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return pyStr(x)
	case []byte:
		return "b" + pyStr(string(x))
	case Decimal:
		return "Decimal('" + string(x) + "')"
	case float64:
		return pyFloat(x)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			f, _ := strconv.ParseFloat(string(x), 64)
			return pyFloat(f)
		}
		return string(x)
	}
	return fmt.Sprint(v)
}

// pyFloat is Python's repr of a float.
func pyFloat(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case math.IsNaN(x):
		return "nan"
	}
	a := math.Abs(x)
	if x == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // 1e+16, 1.5e-05 as Python
	return s
}

// pyStr is Python's repr of a str: single quotes unless the text holds a
// single quote and no double quote.
func pyStr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case escapeControl(&b, r):
		case r > 0x7f && !unicode.IsPrint(r):
			if r <= 0xff {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else if r <= 0xffff {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// Reward is InterCode's SQL reward (SqlEnv.get_reward): with rows as keys,
// IoU = |agent ∩ gold| / |agent ∪ gold| over multisets (1 when both are
// empty); when tau applies and the intersection is not empty, the reward is
// round(tau * IoU, 2) where tau is Kendall's tau-b between the common rows in
// the agent's order and in the gold's order (scipy.stats.kendalltau on the
// row strings; NaN, e.g. for one common row, leaves IoU unscaled).
func Reward(agent, gold [][]any, tau bool) float64 {
	la, lg := keys(agent), keys(gold)
	ca, cg := count(la), count(lg)
	inter, union := 0, 0
	interSet := map[string]int{}
	for k, a := range ca {
		if g := cg[k]; g > 0 {
			interSet[k] = min(a, g)
			inter += min(a, g)
		}
		union += max(a, cg[k])
	}
	for k, g := range cg {
		if ca[k] == 0 {
			union += g
		}
	}
	if union == 0 {
		return 1
	}
	r := float64(inter) / float64(union)
	if tau && inter > 0 {
		xa := intersectItems(la, interSet)
		xg := intersectItems(lg, interSet)
		if t := KendallTau(xa, xg); !math.IsNaN(t) {
			r = env.Round2(t * r)
		}
	}
	return r
}

func keys(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = RowKey(r)
	}
	return out
}

func count(ks []string) map[string]int {
	m := map[string]int{}
	for _, k := range ks {
		m[k]++
	}
	return m
}

// intersectItems keeps, in order, each item while the intersection still
// has copies of it (InterCode's get_intersect_items).
func intersectItems(list []string, inter map[string]int) []string {
	left := map[string]int{}
	for k, v := range inter {
		left[k] = v
	}
	var out []string
	for _, x := range list {
		if left[x] > 0 {
			left[x]--
			out = append(out, x)
		}
	}
	return out
}

// KendallTau is scipy.stats.kendalltau's tau-b of two equally long
// sequences of comparable strings: (concordant - discordant) /
// sqrt((n0 - ties_x) * (n0 - ties_y)) over all pairs; NaN for fewer than two
// items or when either side is all ties.
func KendallTau(x, y []string) float64 {
	n := len(x)
	if n < 2 || len(y) != n {
		return math.NaN()
	}
	var conc, disc, tx, ty float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a, b := strings.Compare(x[i], x[j]), strings.Compare(y[i], y[j])
			switch {
			case a == 0 && b == 0:
				tx++
				ty++
			case a == 0:
				tx++
			case b == 0:
				ty++
			case a == b:
				conc++
			default:
				disc++
			}
		}
	}
	n0 := float64(n*(n-1)) / 2
	// Pairs tied in both count in both tie totals, as in tau-b.
	den := math.Sqrt((n0 - tx) * (n0 - ty))
	if den == 0 {
		return math.NaN()
	}
	return (conc - disc) / den
}
