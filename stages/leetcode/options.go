package leetcode

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Modes of the stage.
const (
	ModeChains       = "chains"       // 2-3 related problems in one dialogue
	ModeAlternatives = "alternatives" // several solutions of one problem (model only)
)

// Alternative kinds.
const (
	AltComplexity = "complexity" // brute force, then an optimal solution
	AltLanguages  = "languages"  // Python, then the same solution in other languages
)

// Options are the pipeline-file settings of the "leetcode" stage.
type Options struct {
	// Modes to run: chains and/or alternatives. Alternatives need a model;
	// without one they are skipped (said in the log and the stats).
	Modes []string `yaml:"modes" json:"modes"`
	// Sizes are the chain lengths drawn per chain (each equally likely).
	Sizes []int `yaml:"sizes" json:"sizes"`
	// Floor is the least relatedness (TF-IDF cosine of the problem texts
	// plus TagWeight times the Jaccard index of their topic tags) between a
	// chain's first problem and the others.
	Floor float64 `yaml:"floor" json:"floor"`
	// TagWeight weighs shared topic tags against text similarity.
	TagWeight float64 `yaml:"tag_weight" json:"tag_weight"`
	// Neighbors is how many nearest problems are candidates per problem.
	Neighbors int `yaml:"neighbors" json:"neighbors"`
	// Seed makes chain order and sizes reproducible.
	Seed int64 `yaml:"seed" json:"seed"`
	// Alternatives are the kinds of alternative-solution dialogues, one
	// drawn per problem by Seed.
	Alternatives []string `yaml:"alternatives" json:"alternatives"`
	// Languages are the other languages of the "languages" kind. Only
	// languages the harness can judge are run; the rest are labelled
	// unchecked.
	Languages []string `yaml:"languages" json:"languages"`
	// MaxAlternatives caps the problems that get an alternatives dialogue
	// (0 = all).
	MaxAlternatives int `yaml:"max_alternatives" json:"max_alternatives"`
	// MaxIterations bounds the model's write-run-fix loop per turn.
	MaxIterations int `yaml:"max_iterations" json:"max_iterations"`
	// Timeout bounds one test run; Parallel the runs (and dialogues) in flight.
	Timeout  time.Duration `yaml:"timeout" json:"timeout"`
	Parallel int           `yaml:"parallel" json:"parallel" key:"-"`
	// Endpoint names the model endpoint ("" = the stage's default).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// KeepProblems also passes the problem items on (they are consumed
	// otherwise); items of other kinds always pass through.
	KeepProblems bool `yaml:"keep_problems" json:"keep_problems"`
	// MaxRejected is the share (0..1) of the alternatives dialogues the
	// model finished that the alternatives gate may reject (same code
	// twice, no complexity stated, another language unjudged or failing,
	// tests still failing) before the stage fails loudly; 1 never fails.
	MaxRejected float64 `yaml:"max_rejected" json:"max_rejected"`
}

// DefaultOptions are the stage's defaults.
var DefaultOptions = Options{
	Modes:         []string{ModeChains, ModeAlternatives},
	Sizes:         []int{2, 3},
	Floor:         0.2,
	TagWeight:     0.5,
	Neighbors:     10,
	Seed:          1,
	Alternatives:  []string{AltComplexity, AltLanguages},
	Languages:     []string{"javascript"},
	MaxIterations: 3,
	Timeout:       10 * time.Second,
	Parallel:      4,
	MaxRejected:   0.2,
}

// Validate checks the settings.
func (o Options) Validate() error {
	var errs []error
	for _, m := range o.Modes {
		if m != ModeChains && m != ModeAlternatives {
			errs = append(errs, fmt.Errorf("leetcode: mode %q: want %s or %s", m, ModeChains, ModeAlternatives))
		}
	}
	for _, s := range o.Sizes {
		if s < 2 || s > 5 {
			errs = append(errs, fmt.Errorf("leetcode: size %d: want 2 to 5", s))
		}
	}
	if slices.Contains(o.Modes, ModeChains) && len(o.Sizes) == 0 {
		errs = append(errs, errors.New("leetcode: sizes must not be empty"))
	}
	for _, a := range o.Alternatives {
		if a != AltComplexity && a != AltLanguages {
			errs = append(errs, fmt.Errorf("leetcode: alternative %q: want %s or %s", a, AltComplexity, AltLanguages))
		}
	}
	if slices.Contains(o.Modes, ModeAlternatives) && len(o.Alternatives) == 0 {
		errs = append(errs, errors.New("leetcode: alternatives must not be empty"))
	}
	if o.Neighbors < 1 || o.Parallel < 1 || o.MaxIterations < 1 {
		errs = append(errs, errors.New("leetcode: neighbors, parallel and max_iterations must be at least 1"))
	}
	if o.MaxRejected < 0 || o.MaxRejected > 1 {
		errs = append(errs, fmt.Errorf("leetcode: max_rejected %v: want a share between 0 and 1", o.MaxRejected))
	}
	if o.Floor < 0 || o.TagWeight < 0 || o.Timeout < 0 || o.MaxAlternatives < 0 {
		errs = append(errs, errors.New("leetcode: floor, tag_weight, timeout and max_alternatives must not be negative"))
	}
	return errors.Join(errs...)
}

func (o Options) has(mode string) bool { return slices.Contains(o.Modes, mode) }
