package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/remote"
	"github.com/codefeedback/codefeedback/schema"
	"gopkg.in/yaml.v3"
)

// InputsName is the reserved source name for the pipeline file's inputs in a
// stage's `input:` list.
const InputsName = "inputs"

// Config is a parsed and checked pipeline file.
type Config struct {
	File     string // path of the pipeline file
	RunDir   string // resolved run directory
	Inputs   []InputSpec
	Executor string
	Stages   []*StageSpec // in execution order (topological, stable by file order)
	Outputs  []OutputSpec

	model, embedder *yaml.Node
}

// InputSpec is one input file and the adapter that reads it.
type InputSpec struct {
	Path   string `yaml:"path" json:"path"`
	Format string `yaml:"format" json:"format"`
	// As says what the file's records become (schema.As): auto (default: a
	// record with tests is a problem, one without tests a query, its output
	// kept as the reference answer), query or problem.
	As   string `yaml:"as" json:"as,omitempty"`
	node *yaml.Node
}

// OutputSpec is one published output file.
type OutputSpec struct {
	Path   string `yaml:"path" json:"path"`
	Format string `yaml:"format" json:"format"` // an output format (RegisterOutput); default "jsonl"
	From   string `yaml:"from" json:"from"`     // stage name; default the last stage
	Kind   string `yaml:"kind" json:"kind"`     // only items of this kind; default all
	node   *yaml.Node
}

// StageOptions are the engine's settings of one stage instance.
type StageOptions struct {
	Concurrency int           `yaml:"concurrency" json:"concurrency"` // parallel Each calls
	Retries     int           `yaml:"retries" json:"retries"`         // extra attempts after a transient error
	Timeout     time.Duration `yaml:"timeout" json:"timeout"`         // per item attempt; 0 = none
	// GateMinChecks is the sample a quality gate needs before it may trip
	// the stage (see Gated): fewer checks never trip it.
	GateMinChecks int `yaml:"gate_min_checks" json:"gate_min_checks,omitempty"`
}

// StageSpec is one stage instance of a pipeline file.
type StageSpec struct {
	Type  string   // registered stage name
	Name  string   // instance name (unique); default Type
	Input []string // source stage names or "inputs"; default the previous stage
	StageOptions
	Settings json.RawMessage // decoded options as JSON (cache key, manifest)
	Line     int

	whole bool // a whole-set stage (AllStage): phases split at it
	reg   registered
	opts  reflect.Value // *O
}

// WholeSet reports whether the stage needs the whole set at once (an
// AllStage: pack, dedup, audit, leetcode) rather than one item at a time.
func (s *StageSpec) WholeSet() bool { return s.whole }

type rawStage struct {
	Stage        string   `yaml:"stage"`
	Name         string   `yaml:"name"`
	Input        []string `yaml:"input"`
	StageOptions `yaml:",inline"`
	Settings     yaml.Node `yaml:"settings"`
}

type rawConfig struct {
	RunDir   string       `yaml:"run_dir"`
	Inputs   []InputSpec  `yaml:"inputs"`
	Executor string       `yaml:"executor"`
	Model    yaml.Node    `yaml:"model"`
	Embedder yaml.Node    `yaml:"embedder"`
	Defaults StageOptions `yaml:"defaults"`
	Stages   []rawStage   `yaml:"stages"`
	Outputs  []OutputSpec `yaml:"outputs"`
}

// DefaultStageOptions apply where neither the stage nor `defaults:` say.
var DefaultStageOptions = StageOptions{Concurrency: 8, Retries: 3, GateMinChecks: 50}

// Load reads and checks a pipeline file. All mistakes found are returned
// together as ConfigErrors, each with file:line. Relative input paths are
// resolved against the pipeline file's directory; the run directory and
// output paths against the current directory. runDir, when not empty,
// overrides the file's run_dir.
func Load(path, runDir string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	l := &errList{file: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, ConfigErrors{syntaxError(path, err)}
	}
	if len(doc.Content) == 0 {
		return nil, ConfigErrors{{File: path, Msg: "empty pipeline file"}}
	}
	var raw rawConfig
	decodeStrict(&doc, reflect.ValueOf(&raw).Elem(), l)
	root := doc.Content[0]
	c := &Config{File: path, Executor: raw.Executor}
	dir := filepath.Dir(path)

	c.RunDir = raw.RunDir
	if runDir != "" {
		c.RunDir = runDir
	}
	if c.RunDir == "" {
		c.RunDir = filepath.Join("runs", strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}

	inputsNode := child(root, "inputs")
	if len(raw.Inputs) == 0 {
		l.at(orNode(inputsNode, root), "no inputs: add `inputs:` with at least one {path, format}")
	}
	for i, in := range raw.Inputs {
		n := item(inputsNode, i)
		if in.Path == "" {
			l.at(n, "input has no path")
			continue
		}
		switch {
		case remote.IsURL(in.Path):
			// hf:// and http(s) inputs are fetched (and cached) at run time.
			if _, err := remote.Resolve(in.Path, remote.Options{}); err != nil {
				l.at(orNode(child(n, "path"), n), "input %v", strings.TrimPrefix(err.Error(), "remote: "))
			}
		default:
			if !filepath.IsAbs(in.Path) {
				in.Path = filepath.Join(dir, in.Path)
			}
			if _, err := os.Stat(in.Path); err != nil {
				l.at(orNode(child(n, "path"), n), "input file %s: %v", in.Path, errors.Unwrap(err))
			}
		}
		if in.Format == "" {
			in.Format = guessFormat(in.Path)
		}
		if _, ok := lookupFormat(in.Format); !ok {
			l.at(orNode(child(n, "format"), n), "unknown input format %q%s", in.Format, didYouMean(in.Format, InputFormats()))
		}
		if _, err := schema.ParseAs(in.As); err != nil {
			l.at(orNode(child(n, "as"), n), "input %v", err)
		}
		in.node = n
		c.Inputs = append(c.Inputs, in)
	}

	if raw.Executor != "" {
		checkExecutor(raw.Executor, child(root, "executor"), l)
	}
	for _, sec := range []struct {
		name string
		node yaml.Node
		dst  **yaml.Node
	}{{"model", raw.Model, &c.model}, {"embedder", raw.Embedder, &c.embedder}} {
		if sec.node.Kind == 0 {
			continue
		}
		n := sec.node
		*sec.dst = &n
		b, ok := lookupService(sec.name)
		if !ok {
			l.at(&n, "no %s support is built into this program (no service registered for `%s:`)", sec.name, sec.name)
			continue
		}
		if _, err := b(ServiceEnv{Decode: strictDecoder(&n, l), Logger: discardLogger, EngineRetries: true}); err != nil && !errors.Is(err, errAlreadyReported) {
			l.at(&n, "%s: %v", sec.name, err)
		}
	}

	defaults := DefaultStageOptions
	if d := raw.Defaults; d != (StageOptions{}) {
		defaults = mergeOptions(defaults, d)
	}
	stagesNode := child(root, "stages")
	if len(raw.Stages) == 0 {
		l.at(orNode(stagesNode, root), "no stages: add `stages:` with at least one {stage: NAME}")
	}
	byName := map[string]*StageSpec{}
	var specs []*StageSpec
	for i, rs := range raw.Stages {
		n := item(stagesNode, i)
		s := &StageSpec{Type: rs.Stage, Name: rs.Name, Input: rs.Input, Line: n.Line,
			StageOptions: mergeOptions(defaults, rs.StageOptions)}
		if s.Name == "" {
			s.Name = s.Type
		}
		if s.Type == "" {
			l.at(n, "stage has no `stage:` (registered stages: %s)", strings.Join(Stages(), ", "))
			continue
		}
		if s.Name == InputsName {
			l.at(n, "%q is reserved for the pipeline inputs; give the stage another name", InputsName)
		}
		if prev, dup := byName[s.Name]; dup {
			l.at(n, "two stages named %q (the other at line %d); set `name:` to tell them apart", s.Name, prev.Line)
			continue
		}
		if s.Concurrency < 1 {
			l.at(orNode(child(n, "concurrency"), n), "concurrency must be at least 1, got %d", s.Concurrency)
		}
		if s.Retries < 0 {
			l.at(orNode(child(n, "retries"), n), "retries must be 0 or more, got %d", s.Retries)
		}
		byName[s.Name] = s
		specs = append(specs, s)
		reg, ok := lookupStage(s.Type)
		if !ok {
			l.at(orNode(child(n, "stage"), n), "unknown stage %q%s", s.Type, didYouMean(s.Type, Stages()))
			continue
		}
		s.reg = reg
		s.opts = reg.defaults()
		if rs.Settings.Kind != 0 {
			before := len(l.errs)
			decodeStrict(&rs.Settings, s.opts.Elem(), l)
			if len(l.errs) > before {
				continue
			}
		}
		if v, ok := s.opts.Interface().(Validator); ok {
			if err := v.Validate(); err != nil {
				l.at(orNode(child(n, "settings"), n), "stage %s: %v", s.Name, err)
				continue
			}
		}
		s.Settings, err = json.Marshal(s.opts.Interface())
		if err != nil {
			l.at(n, "stage %s: settings cannot be encoded: %v", s.Name, err)
			continue
		}
		// Build once with validate-time services so factory checks run.
		st, err := reg.build(s.opts.Interface(), &Services{Name: s.Name, Stats: NewStats(), Logger: discardLogger})
		if err != nil {
			l.at(orNode(child(n, "settings"), n), "stage %s: %v", s.Name, err)
		} else {
			s.whole = st.all != nil
			closeStage(st)
		}
	}
	// Wiring: default input is the previous stage in file order.
	for i, s := range specs {
		n := item(stagesNode, slices.IndexFunc(raw.Stages, func(r rawStage) bool { return nameOf(r) == s.Name }))
		if len(s.Input) == 0 {
			if i == 0 {
				s.Input = []string{InputsName}
			} else {
				s.Input = []string{specs[i-1].Name}
			}
		}
		for _, src := range s.Input {
			if src == InputsName {
				continue
			}
			if src == s.Name {
				l.at(orNode(child(n, "input"), n), "stage %s reads its own output", s.Name)
			} else if _, ok := byName[src]; !ok {
				l.at(orNode(child(n, "input"), n), "stage %s reads from unknown stage %q%s", s.Name, src, didYouMean(src, append(names(specs), InputsName)))
			}
		}
	}
	c.Stages = topoOrder(specs, byName, l)

	outNode := child(root, "outputs")
	for i, o := range raw.Outputs {
		n := item(outNode, i)
		o.node = n
		if o.Path == "" {
			l.at(n, "output has no path")
		}
		if o.Format == "" {
			o.Format = "jsonl"
		}
		if _, ok := lookupOutput(o.Format); !ok {
			l.at(orNode(child(n, "format"), n), "unknown output format %q%s", o.Format, didYouMean(o.Format, OutputFormats()))
		}
		if o.From == "" && len(specs) > 0 {
			o.From = specs[len(specs)-1].Name
		}
		if _, ok := byName[o.From]; !ok && o.From != "" {
			l.at(orNode(child(n, "from"), n), "output from unknown stage %q%s", o.From, didYouMean(o.From, names(specs)))
		}
		c.Outputs = append(c.Outputs, o)
	}
	if len(l.errs) > 0 {
		slices.SortStableFunc(l.errs, func(a, b ConfigError) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, l.errs
	}
	return c, nil
}

func nameOf(r rawStage) string {
	if r.Name != "" {
		return r.Name
	}
	return r.Stage
}

func names(specs []*StageSpec) []string {
	s := make([]string, len(specs))
	for i, sp := range specs {
		s[i] = sp.Name
	}
	return s
}

// topoOrder orders stages so every stage runs after its inputs, keeping file
// order where the wiring allows; a cycle is reported once at its first stage.
func topoOrder(specs []*StageSpec, byName map[string]*StageSpec, l *errList) []*StageSpec {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var order []*StageSpec
	var visit func(s *StageSpec, path []string) bool
	visit = func(s *StageSpec, path []string) bool {
		switch state[s.Name] {
		case done:
			return true
		case active:
			i := slices.Index(path, s.Name)
			cyc := append(slices.Clone(path[i:]), s.Name)
			l.errs = append(l.errs, ConfigError{File: l.file, Line: s.Line, Col: 5,
				Msg: "stages form a cycle: " + strings.Join(cyc, " -> ")})
			return false
		}
		state[s.Name] = active
		for _, src := range s.Input {
			if d, ok := byName[src]; ok && d != s {
				if !visit(d, append(path, s.Name)) {
					state[s.Name] = done
					return false
				}
			}
		}
		state[s.Name] = done
		order = append(order, s)
		return true
	}
	for _, s := range specs {
		visit(s, nil)
	}
	return order
}

func mergeOptions(base, over StageOptions) StageOptions {
	if over.Concurrency != 0 {
		base.Concurrency = over.Concurrency
	}
	if over.Retries != 0 {
		base.Retries = over.Retries
	}
	if over.Timeout != 0 {
		base.Timeout = over.Timeout
	}
	if over.GateMinChecks != 0 {
		base.GateMinChecks = over.GateMinChecks
	}
	return base
}

func checkExecutor(raw string, n *yaml.Node, l *errList) {
	err := executors.Check(raw)
	if err == nil {
		return
	}
	msg := strings.TrimPrefix(err.Error(), "executors: ")
	if u, perr := executors.ParseURL(raw); perr == nil && !slices.Contains(executors.Drivers(), u.Scheme) {
		msg += didYouMean(u.Scheme, executors.Drivers())
	}
	l.at(n, "executor: %s", msg)
}

// strictDecoder returns a decode function for a service section.
func strictDecoder(n *yaml.Node, l *errList) func(v any) error {
	return func(v any) error {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			return fmt.Errorf("decode needs a pointer, got %T", v)
		}
		before := len(l.errs)
		decodeStrict(n, rv.Elem(), l)
		if len(l.errs) > before {
			return errAlreadyReported
		}
		return nil
	}
}

var errAlreadyReported = errors.New("settings have errors (reported above)")

// child returns the value node of key in mapping n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// item returns element i of sequence n, or nil.
func item(n *yaml.Node, i int) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
		return n
	}
	return n.Content[i]
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}
