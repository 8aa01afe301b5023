package pipeline

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ConfigError is one mistake in a pipeline file, with its position.
type ConfigError struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"` // 1-based; 0 when the mistake has no place
	Col  int    `json:"column,omitempty"`
	Msg  string `json:"message"`
}

func (e ConfigError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Col == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ConfigErrors is every mistake found in a pipeline file, in file order.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// errList collects errors positioned at yaml nodes.
type errList struct {
	file string
	errs ConfigErrors
}

func (l *errList) at(n *yaml.Node, format string, args ...any) {
	e := ConfigError{File: l.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	l.errs = append(l.errs, e)
}

var (
	nodeType      = reflect.TypeFor[yaml.Node]()
	unmarshalType = reflect.TypeFor[yaml.Unmarshaler]()
	textType      = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodeStrict decodes n into v (addressable), reporting every unknown key
// (with a did-you-mean), type mismatch and duplicate key in l. yaml.v3's
// Node.Decode has no KnownFields switch, hence this walker.
func decodeStrict(n *yaml.Node, v reflect.Value, l *errList) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	t := v.Type()
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalType) || reflect.PointerTo(t).Implements(textType) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			l.at(n, "%s", cleanYAMLError(err))
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			v.Set(reflect.Zero(t))
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		decodeStrict(n, v.Elem(), l)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			l.at(n, "want a mapping of %s, got %s", describeStruct(t), describeNode(n))
			return
		}
		fields := yamlFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				l.at(k, "key %q given twice", k.Value)
				continue
			}
			seen[k.Value] = true
			idx, ok := fields[k.Value]
			if !ok {
				l.at(k, "unknown key %q%s", k.Value, didYouMean(k.Value, keys(fields)))
				continue
			}
			decodeStrict(val, v.FieldByIndex(idx), l)
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			// A single scalar where a list is expected is accepted as a
			// one-element list (input: simulate).
			if n.Kind == yaml.ScalarNode {
				s := reflect.MakeSlice(t, 1, 1)
				decodeStrict(n, s.Index(0), l)
				v.Set(s)
				return
			}
			l.at(n, "want a list, got %s", describeNode(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			decodeStrict(c, s.Index(i), l)
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			l.at(n, "want a mapping, got %s", describeNode(n))
			return
		}
		m := reflect.MakeMap(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := reflect.New(t.Key()).Elem()
			decodeStrict(n.Content[i], k, l)
			e := reflect.New(t.Elem()).Elem()
			decodeStrict(n.Content[i+1], e, l)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		if n.Kind != yaml.ScalarNode && t.Kind() != reflect.Interface {
			l.at(n, "want a %s, got %s", t.Kind(), describeNode(n))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			l.at(n, "%s", cleanYAMLError(err))
		}
	}
}

// yamlFields maps yaml key names to field indexes, following ",inline".
func yamlFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct) {
			for k, idx := range yamlFields(f.Type) {
				out[k] = append([]int{i}, idx...)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

func keys(m map[string][]int) []string {
	s := make([]string, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

func describeStruct(t reflect.Type) string {
	ks := keys(yamlFields(t))
	if len(ks) > 8 {
		ks = append(ks[:8], "...")
	}
	return "{" + strings.Join(ks, ", ") + "}"
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
}

// yamlParserProblems are the messages of yaml.v3's parser (parserc.go), as
// opposed to its scanner's. For a parser error yaml.v3 prints the 0-based
// line of the construct being parsed ("while parsing a flow mapping"), one
// line early; for a scanner error it prints the 1-based line.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

// syntaxError makes a YAML syntax error a ConfigError with the 1-based line
// (yaml.v3 reports a parser error's line 0-based; see yamlParserProblems).
func syntaxError(file string, err error) ConfigError {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	num, msg, ok := strings.Cut(strings.TrimPrefix(s, "line "), ": ")
	line, convErr := strconv.Atoi(num)
	if !strings.HasPrefix(s, "line ") || !ok || convErr != nil {
		return ConfigError{File: file, Msg: "YAML syntax: " + s}
	}
	if slices.Contains(yamlParserProblems, msg) {
		line++
		msg += " (in what starts on this line)"
	}
	return ConfigError{File: file, Line: line, Msg: "YAML syntax: " + msg}
}

// cleanYAMLError drops yaml.v3's "yaml: unmarshal errors:\n  line N: " prefix;
// the position is reported by the caller.
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "line ") {
		if _, rest, ok := strings.Cut(s, ": "); ok {
			s = rest
		}
	}
	return s
}

// didYouMean suggests the closest candidate, or "".
func didYouMean(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		if len(candidates) > 0 && len(candidates) <= 12 {
			return " (known: " + strings.Join(candidates, ", ") + ")"
		}
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
