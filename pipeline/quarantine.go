package pipeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// Rejection is one model answer (or one item) a quality gate turned away.
// Stages report them through gates.Record with a failing verdict (or
// Stats.Reject directly); the engine writes them, in input order, with the
// stage, the item and the setting that governs the gate, to the stage's
// quarantine file and the run's quarantine.jsonl, for fresh and cached
// items alike. What a gate rejected is never published.
type Rejection struct {
	Stage   string `json:"stage,omitempty"`
	ItemID  string `json:"item_id,omitempty"`
	Gate    string `json:"gate"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail,omitempty"`
	Setting string `json:"setting,omitempty"` // the stage setting that bounds this gate's rejected share
}

// maxDetail bounds a rejection's detail: enough to read what the model
// said, not a whole program.
const maxDetail = 4000

// Reject records that gate turned something away for reason, with detail
// (the rejected text). In an item recorder (ItemStats) the rejection is
// stored with the item's cached result and reaches the quarantine once the
// item is done; on a stage's Services.Stats (whole-set stages) it reaches
// the quarantine when the stage ends. Reject on a nil *Stats does nothing.
// It does not count the verdict: gates.Record does both.
func (s *Stats) Reject(gate, reason, detail string) {
	if s == nil {
		return
	}
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "..."
	}
	s.mu.Lock()
	s.rejects = append(s.rejects, Rejection{Gate: gate, Reason: reason, Detail: strings.ToValidUTF8(detail, "")})
	s.mu.Unlock()
}

// takeRejects returns and clears the recorded rejections.
func (s *Stats) takeRejects() []Rejection {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rejects
	s.rejects = nil
	return r
}

// Gated is implemented by stages with quality gates over their model's
// answers. The engine watches each gate's rejected share as items finish
// (fresh or cached, in input order): once a gate has seen the stage's
// minimum sample (StageOptions.GateMinChecks) and its rejected share is
// clearly over MaxShare (the lower end of a 95% Wilson interval is above
// it), the gate trips. A tripped stage stops handing out new work (no more
// model calls), lets the work in flight finish, passes the rest through
// when it is a Bypasser (else quarantines it as not processed), and
// completes, so the stages that follow still run and the run still
// publishes what passed every gate; the run then ends with ErrGateTripped
// naming the gate, its figures, the setting and the quarantine file. At
// the end of a stage a gate over MaxShare on at least the minimum sample
// trips it too. A gate checked fewer times than the minimum never trips:
// three rejections in five say little.
type Gated interface{ Gates() []GateRule }

// GateRule is one gate's threshold.
type GateRule struct {
	Gate     string  // the gate's name as recorded (gate/<name>/...); "" = every gate of the stage
	MaxShare float64 // rejected share allowed, 0..1; 1 or more disables the rule
	Setting  string  // the stage setting that holds MaxShare, named in errors ("max_rejected")
}

// Bypasser is implemented by stages whose input may go on unchanged when
// the stage cannot do its work: explain passes a dialogue on without
// prefaces. Bypass returns the outputs for in; they are not cached (the
// next run does the work).
type Bypasser interface {
	Bypass(in Item) ([]Item, error)
}

// ErrGateTripped means a stage's quality gate tripped: the run completed
// and published what passed every gate, the rest is in the quarantine.
var ErrGateTripped = errors.New("quality gate tripped")

// GateTrip is a tripped gate, in the manifest.
type GateTrip struct {
	Stage    string             `json:"stage"`
	Gate     string             `json:"gate"`
	Setting  string             `json:"setting"`
	MaxShare float64            `json:"max_share"`
	Checked  float64            `json:"checked"`
	Rejected float64            `json:"rejected"`
	Reasons  map[string]float64 `json:"reasons,omitempty"`
	// Early: the stage stopped handing out work when the gate tripped;
	// Skipped items were then passed through (Bypassed) or quarantined.
	Early    bool  `json:"early,omitempty"`
	Skipped  int64 `json:"skipped,omitempty"`
	Bypassed bool  `json:"bypassed,omitempty"`
}

// Message says what tripped and what to do about it.
func (t GateTrip) Message() string {
	share := 0.0
	if t.Checked > 0 {
		share = t.Rejected / t.Checked
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stage %s: gate %s rejected %.0f of %.0f (%.0f%%, more than the allowed %.0f%%; reasons: %s)",
		t.Stage, t.Gate, t.Rejected, t.Checked, 100*share, 100*t.MaxShare, reasonList(t.Reasons))
	if t.Early {
		fmt.Fprintf(&b, "; the stage stopped calling the model after %.0f checks", t.Checked)
		if t.Skipped > 0 {
			what := "quarantined as not processed"
			if t.Bypassed {
				what = "passed on without this stage's work"
			}
			fmt.Fprintf(&b, ", %d items %s", t.Skipped, what)
		}
	}
	if t.Setting != "" {
		fmt.Fprintf(&b, "; the limit is the stage's `%s` setting (settings: {%s: ...} under stage %s)", t.Setting, t.Setting, t.Stage)
	}
	return b.String()
}

func reasonList(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	if len(parts) == 0 {
		return "none recorded"
	}
	return strings.Join(parts, ", ")
}

// gateWatch follows a stage's gates against its rules.
type gateWatch struct {
	stage     string
	rules     []GateRule
	minChecks float64
}

func newGateWatch(stage string, g Gated, minChecks int) *gateWatch {
	if g == nil {
		return nil
	}
	rules := g.Gates()
	if len(rules) == 0 {
		return nil
	}
	return &gateWatch{stage: stage, rules: rules, minChecks: float64(max(minChecks, 1))}
}

// gateFigure is one gate's totals in a statistics snapshot.
type gateFigure struct {
	gate              string
	checked, rejected float64
	reasons           map[string]float64
}

func gateFigures(stats map[string]float64) []gateFigure {
	var out []gateFigure
	for k, v := range stats {
		rest, ok := strings.CutPrefix(k, "gate/")
		if !ok {
			continue
		}
		g, tail, ok := strings.Cut(rest, "/")
		if !ok || tail != "checked" {
			continue
		}
		f := gateFigure{gate: g, checked: v, rejected: stats["gate/"+g+"/rejected"], reasons: map[string]float64{}}
		for k2, v2 := range stats {
			if r, ok := strings.CutPrefix(k2, "gate/"+g+"/reason/"); ok {
				f.reasons[r] = v2
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gate < out[j].gate })
	return out
}

// rule returns the rule for gate.
func (w *gateWatch) rule(gate string) (GateRule, bool) {
	for _, r := range w.rules {
		if r.Gate == gate {
			return r, true
		}
	}
	for _, r := range w.rules {
		if r.Gate == "" {
			return r, true
		}
	}
	return GateRule{}, false
}

// check returns the first gate over its rule in stats, or nil. early asks
// for the clear-excess test used while the stage runs; otherwise the plain
// share is compared (the stage's final figures).
func (w *gateWatch) check(stats map[string]float64, early bool) *GateTrip {
	if w == nil {
		return nil
	}
	for _, f := range gateFigures(stats) {
		r, ok := w.rule(f.gate)
		if !ok || r.MaxShare >= 1 || f.checked < w.minChecks {
			continue
		}
		over := f.rejected/f.checked > r.MaxShare
		if early {
			over = wilsonLow(f.rejected, f.checked) > r.MaxShare
		}
		if over {
			return &GateTrip{Stage: w.stage, Gate: f.gate, Setting: r.Setting, MaxShare: r.MaxShare,
				Checked: f.checked, Rejected: f.rejected, Reasons: f.reasons, Early: early}
		}
	}
	return nil
}

// wilsonLow is the lower end of the 95% Wilson score interval of k
// successes in n: the share the data says is surely exceeded.
func wilsonLow(k, n float64) float64 {
	if n <= 0 {
		return 0
	}
	const z = 1.96
	p := k / n
	d := 1 + z*z/n
	c := p + z*z/(2*n)
	m := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	return (c - m) / d
}

// quarantineFile is a stage's quarantine, in its stage directory.
const quarantineFile = "quarantine.jsonl"

// gateSnapshot copies the gate figures (gate/...) of s.
func (s *Stats) gateSnapshot() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]float64{}
	for k, v := range s.vals {
		if strings.HasPrefix(k, "gate/") {
			m[k] = v
		}
	}
	return m
}

// writeAllQuarantine writes a whole-set stage's rejections to its
// quarantine file (replacing the last run's).
func (r *runner) writeAllQuarantine(s *StageSpec, rejects []Rejection, rec *StageRecord) error {
	if r.o.DryRun {
		return nil
	}
	var b []byte
	for _, rj := range rejects {
		if rj.Stage == "" {
			rj.Stage = s.Name
		}
		line, err := json.Marshal(rj)
		if err != nil {
			return fmt.Errorf("stage %s: encode rejection: %w", s.Name, err)
		}
		b = append(append(b, line...), '\n')
	}
	rec.Counts.Quarantined = int64(len(rejects))
	return schema.WriteFileAtomic(filepath.Join(r.stageDir(s.Name), quarantineFile), b)
}

// settleAllGates checks a whole-set stage's gates on its final figures
// (a whole-set stage cannot stop early).
func (r *runner) settleAllGates(s *StageSpec, st *stageCaps, stats map[string]float64, rec *StageRecord) {
	w := newGateWatch(s.Name, st.gated, s.GateMinChecks)
	if t := w.check(stats, false); t != nil {
		rec.Status, rec.Gate = "gate-tripped", t
		r.trips = append(r.trips, *t)
	}
}

// quarantineSamples renders the first n rejections of gate in a stage's
// quarantine file as "; samples: [item: reason: detail] ...", or "".
func quarantineSamples(path, gate string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for k := 0; k < n && sc.Scan(); {
		var rj Rejection
		if json.Unmarshal(sc.Bytes(), &rj) != nil || rj.Gate != gate || rj.Reason == "not_processed" {
			continue
		}
		if k == 0 {
			b.WriteString("; samples:")
		}
		d := strings.Join(strings.Fields(rj.Detail), " ")
		if len(d) > 160 {
			d = strings.ToValidUTF8(d[:160], "") + "..."
		}
		fmt.Fprintf(&b, " [%s: %s: %s]", rj.ItemID, rj.Reason, d)
		k++
	}
	return b.String()
}
