package feedbackloop

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// What happens to a dialogue whose final code still fails.
const (
	FailedDrop  = "drop"  // not written (counted in the stats)
	FailedLabel = "label" // written with labels final_status=fail and rejected=<why>
	FailedKeep  = "keep"  // written like a successful one (final_status=fail)
)

// How an accepted run is answered (Options.Closing).
const (
	ClosingModel    = "model"
	ClosingTemplate = "template"
)

// FollowupKinds are the kinds of follow-up request, with what each asks for
// (shown to the model that plays the user).
var FollowupKinds = []string{"extend", "optimize", "tests", "explain", "edge_cases"}

var followupDescriptions = map[string]string{
	"extend":     "extend the functionality: ask for one related new capability, such as an extra optional parameter or a companion function",
	"optimize":   "optimise: ask for the code to be faster or to use less memory on large inputs, with the same results",
	"tests":      "add tests: ask for a few assert-based tests of the code, including edge cases, that run together with it",
	"explain":    "explain: ask for comments or a docstring that explain how the code works and why",
	"edge_cases": "handle edge cases: ask that the code cope with unusual inputs (empty, very large or invalid ones) in a defined way",
}

// Options are the settings of the simulate stage (pipeline file keys in
// yaml tags). Zero values take the defaults in DefaultOptions.
type Options struct {
	// MaxIterations bounds the write-run-fix loop per user turn (and per
	// feedback round): the loop stops when the judge accepts the code or
	// after this many runs.
	MaxIterations int `yaml:"max_iterations" json:"max_iterations"`
	// FeedbackRounds is the number of simulated human feedback rounds after
	// the code passes (0 = execution feedback only).
	FeedbackRounds int `yaml:"feedback_rounds" json:"feedback_rounds"`
	// Followups is the number of follow-up user requests after the first
	// accepted answer (Code-Feedback's multi-turn follow-ups: extend,
	// optimise, add tests, explain, handle edge cases), each a new user
	// turn written by the feedback model and answered with code that runs
	// again (and passes the problem's tests again, where it has them).
	Followups int `yaml:"followups" json:"followups"`
	// FollowupKinds weighs the follow-up kinds (FollowupKinds); empty means
	// uniform, a missing kind has weight 0.
	FollowupKinds map[string]float64 `yaml:"followup_kinds" json:"followup_kinds,omitempty"`
	// Closing is how an accepted run is answered: "model" (the writer
	// replies to the run in prose: what it shows and what the code does)
	// or "template" (one templated sentence). "" is template.
	Closing string `yaml:"closing" json:"closing,omitempty"`
	// Failed is drop, label or keep (see the Failed* constants).
	Failed string `yaml:"failed" json:"failed"`
	// Categories weighs the feedback categories (schema.FeedbackCategories);
	// empty means uniform, a missing category has weight 0.
	Categories map[string]float64 `yaml:"categories" json:"categories,omitempty"`
	// Oracle is the share (0..1) of feedback rounds in which the feedback
	// model sees the canonical solution, for problems that have one.
	Oracle float64 `yaml:"oracle" json:"oracle"`
	// Seed drives the category and oracle draws (deterministic per dialogue).
	Seed int64 `yaml:"seed" json:"seed"`
	// Timeout bounds one run of the code (a notebook cell or a test run).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Language is the language of queries that neither carry one nor name
	// one in their text (python, bash or sql). A query that asks for
	// another language (SQL, JavaScript, HTML, ...) is answered in it, run
	// when the sandbox has its runner, else labelled not executable.
	Language string `yaml:"language" json:"language"`
	// OutputChars caps each of stdout and stderr shown in an execution turn;
	// longer output keeps its head and tail with a marker between them.
	OutputChars int `yaml:"output_chars" json:"output_chars"`
	// Writer, Judge and Feedback name the model endpoints (from the `model:`
	// section's endpoints) for the three roles; "" is the stage's default.
	Writer   string `yaml:"writer" json:"writer,omitempty"`
	Judge    string `yaml:"judge" json:"judge,omitempty"`
	Feedback string `yaml:"feedback" json:"feedback,omitempty"`
	// Prompts overrides prompt templates by name (simulate_writer,
	// simulate_task, simulate_closing, simulate_summary, judge_request,
	// feedback_request, followup_request) with
	// template text; the text is part of the cache key.
	Prompts map[string]string `yaml:"prompts" json:"prompts,omitempty"`
	// KeepInputs also passes the input items on (they are consumed
	// otherwise); items of other kinds always pass through.
	KeepInputs bool `yaml:"keep_inputs" json:"keep_inputs"`
	// MaxRejected is the share (0..1) of checks each gate may reject after
	// its repairs (feedback or follow-up rounds with code in the request, a
	// wrong category, an unreadable answer, an unchanged or failing
	// revision; unreadable judge answers; writer answers with no code or
	// thanking a program's output) before the stage fails loudly; 1 never
	// fails. A rejected round is dropped, the rest of its dialogue kept.
	MaxRejected float64 `yaml:"max_rejected" json:"max_rejected"`
	// Calibrate is the share (0..1) of test-judged runs that ran cleanly
	// whose code also goes to the judge model, to measure its agreement with
	// the tests; 0 turns calibration off.
	Calibrate float64 `yaml:"calibrate" json:"calibrate"`
	// MinAgreement is the judge's agreement with the tests (0..1) below
	// which, once CalibrationMin verdicts were compared, the judge model is
	// not trusted: the stage then ships only test-judged dialogues and
	// quarantines the model-judged ones.
	MinAgreement   float64 `yaml:"min_agreement" json:"min_agreement"`
	CalibrationMin int     `yaml:"calibration_min" json:"calibration_min"`
}

// DefaultOptions are the stage's defaults.
var DefaultOptions = Options{
	MaxIterations:  3,
	FeedbackRounds: 1,
	Followups:      1,
	Closing:        ClosingModel,
	Failed:         FailedDrop,
	Oracle:         0.5,
	Seed:           1,
	Timeout:        10 * time.Second,
	Language:       "python",
	OutputChars:    2000,
	MaxRejected:    0.2,
	Calibrate:      0.25,
	MinAgreement:   0.9,
	CalibrationMin: 10,
}

func (o Options) WithDefaults() Options {
	d := DefaultOptions
	if o.MaxIterations <= 0 {
		o.MaxIterations = d.MaxIterations
	}
	if o.Failed == "" {
		o.Failed = d.Failed
	}
	if o.Closing == "" {
		o.Closing = ClosingTemplate
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Language == "" {
		o.Language = d.Language
	}
	if o.OutputChars <= 0 {
		o.OutputChars = d.OutputChars
	}
	return o
}

// Validate checks the settings.
func (o Options) Validate() error {
	var errs []error
	if o.MaxIterations < 0 || o.FeedbackRounds < 0 || o.Followups < 0 || o.Timeout < 0 || o.OutputChars < 0 {
		errs = append(errs, errors.New("simulate: max_iterations, feedback_rounds, followups, timeout and output_chars must not be negative"))
	}
	switch o.Closing {
	case "", ClosingModel, ClosingTemplate:
	default:
		errs = append(errs, fmt.Errorf("simulate: closing %q: want model or template", o.Closing))
	}
	if _, err := o.followupWeights(); err != nil {
		errs = append(errs, err)
	}
	switch o.Failed {
	case "", FailedDrop, FailedLabel, FailedKeep:
	default:
		errs = append(errs, fmt.Errorf("simulate: failed %q: want drop, label or keep", o.Failed))
	}
	for name, v := range map[string]float64{"max_rejected": o.MaxRejected, "calibrate": o.Calibrate, "min_agreement": o.MinAgreement} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("simulate: %s %v: want a share between 0 and 1", name, v))
		}
	}
	if o.CalibrationMin < 0 {
		errs = append(errs, errors.New("simulate: calibration_min must not be negative"))
	}
	if o.Oracle < 0 || o.Oracle > 1 {
		errs = append(errs, fmt.Errorf("simulate: oracle %v: want a share between 0 and 1", o.Oracle))
	}
	switch o.Language {
	case "", "python", "bash", "sql":
	default:
		errs = append(errs, fmt.Errorf("simulate: language %q: want python, bash or sql", o.Language))
	}
	if _, err := o.categoryWeights(); err != nil {
		errs = append(errs, err)
	}
	for name := range o.Prompts {
		if !isPromptName(name) {
			errs = append(errs, fmt.Errorf("simulate: prompts: unknown template %q (known: %s)", name, strings.Join(promptNames, ", ")))
		}
	}
	return errors.Join(errs...)
}

// categoryWeights returns one weight per schema.FeedbackCategories entry.
func (o Options) categoryWeights() ([]float64, error) {
	w := make([]float64, len(schema.FeedbackCategories))
	if len(o.Categories) == 0 {
		for i := range w {
			w[i] = 1
		}
		return w, nil
	}
	idx := map[string]int{}
	for i, c := range schema.FeedbackCategories {
		idx[c] = i
	}
	var unknown []string
	total := 0.0
	for c, v := range o.Categories {
		i, ok := idx[c]
		if !ok {
			unknown = append(unknown, c)
			continue
		}
		if v < 0 {
			return nil, fmt.Errorf("simulate: categories: %s has a negative weight", c)
		}
		w[i] = v
		total += v
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("simulate: categories: unknown %s (known: %s)", strings.Join(unknown, ", "), strings.Join(schema.FeedbackCategories, ", "))
	}
	if total == 0 {
		return nil, errors.New("simulate: categories: every weight is 0")
	}
	return w, nil
}

// followupWeights returns one weight per FollowupKinds entry.
func (o Options) followupWeights() ([]float64, error) {
	w := make([]float64, len(FollowupKinds))
	if len(o.FollowupKinds) == 0 {
		for i := range w {
			w[i] = 1
		}
		return w, nil
	}
	total := 0.0
	var unknown []string
	for k, v := range o.FollowupKinds {
		i := slices.Index(FollowupKinds, k)
		if i < 0 {
			unknown = append(unknown, k)
			continue
		}
		if v < 0 {
			return nil, fmt.Errorf("simulate: followup_kinds: %s has a negative weight", k)
		}
		w[i] = v
		total += v
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("simulate: followup_kinds: unknown %s (known: %s)", strings.Join(unknown, ", "), strings.Join(FollowupKinds, ", "))
	}
	if total == 0 {
		return nil, errors.New("simulate: followup_kinds: every weight is 0")
	}
	return w, nil
}
