package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/internal/tally"
	"github.com/codefeedback/codefeedback/pipeline"
)

// ftype is a column type inferred from JSON records the way a JSON loader
// (pyarrow, as `datasets` uses it) infers it: objects become structs with
// the union of their keys, arrays lists of the merged element type.
type ftype struct {
	kind   string // string, int64, float64, bool, null, list, struct
	elem   *ftype
	fields map[string]*ftype
	order  []string
}

func inferValue(v any) *ftype {
	switch x := v.(type) {
	case nil:
		return &ftype{kind: "null"}
	case bool:
		return &ftype{kind: "bool"}
	case string:
		return &ftype{kind: "string"}
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return &ftype{kind: "float64"}
		}
		return &ftype{kind: "int64"}
	case []any:
		t := &ftype{kind: "list", elem: &ftype{kind: "null"}}
		for _, e := range x {
			t.elem = merge(t.elem, inferValue(e))
		}
		return t
	case map[string]any:
		t := &ftype{kind: "struct", fields: map[string]*ftype{}}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			t.fields[k] = inferValue(x[k])
			t.order = append(t.order, k)
		}
		return t
	}
	return &ftype{kind: "string"}
}

// merge combines two inferred types; incompatible scalars widen to string.
func merge(a, b *ftype) *ftype {
	switch {
	case a == nil || a.kind == "null":
		return b
	case b == nil || b.kind == "null":
		return a
	case a.kind == b.kind:
		switch a.kind {
		case "list":
			return &ftype{kind: "list", elem: merge(a.elem, b.elem)}
		case "struct":
			t := &ftype{kind: "struct", fields: map[string]*ftype{}, order: append([]string(nil), a.order...)}
			for k, v := range a.fields {
				t.fields[k] = v
			}
			for _, k := range b.order {
				if _, ok := t.fields[k]; !ok {
					t.order = append(t.order, k)
				}
				t.fields[k] = merge(t.fields[k], b.fields[k])
			}
			return t
		}
		return a
	case (a.kind == "int64" && b.kind == "float64") || (a.kind == "float64" && b.kind == "int64"):
		return &ftype{kind: "float64"}
	}
	return &ftype{kind: "string"}
}

// Feature is one entry of a dataset card's dataset_info.features, in the
// Hugging Face card format: a scalar dtype, a sequence of a type, a list of
// struct fields, or a struct.
type Feature struct {
	Name     string    `yaml:"name" json:"name"`
	Dtype    string    `yaml:"dtype,omitempty" json:"dtype,omitempty"`
	Sequence any       `yaml:"sequence,omitempty" json:"sequence,omitempty"`
	List     []Feature `yaml:"list,omitempty" json:"list,omitempty"`
	Struct   []Feature `yaml:"struct,omitempty" json:"struct,omitempty"`
}

// spec is a type in a position that takes a bare type (a sequence's item).
func (t *ftype) spec() any {
	switch t.kind {
	case "list":
		return map[string]any{"sequence": t.elem.spec()}
	case "struct":
		m := map[string]any{}
		for _, k := range t.order {
			m[k] = t.fields[k].spec()
		}
		return m
	}
	return t.kind
}

func (t *ftype) features() []Feature {
	var out []Feature
	for _, k := range t.order {
		f := t.fields[k]
		ft := Feature{Name: k}
		switch f.kind {
		case "list":
			if f.elem.kind == "struct" {
				ft.List = f.elem.features()
			} else {
				ft.Sequence = f.elem.spec()
			}
		case "struct":
			ft.Struct = f.features()
		default:
			ft.Dtype = f.kind
		}
		out = append(out, ft)
	}
	return out
}

// FileInfo is what the card says about one exported data file.
type FileInfo struct {
	Path     string    `json:"path"` // as published (relative to the run's working directory or absolute)
	Name     string    `json:"name"` // file name beside the card
	From     string    `json:"from"` // stage it came from
	Examples int64     `json:"num_examples"`
	Bytes    int64     `json:"num_bytes"`
	Features []Feature `json:"features"`
	Parquet  bool      `json:"parquet,omitempty"` // features not declared: the file has its own schema
}

// InspectFile counts the records of a JSONL data file and infers its
// features. It reports ok=false for a file that is not JSONL or whose
// records have no "messages" field (not a dialogue dataset).
func InspectFile(path string) (FileInfo, bool, error) {
	fi := FileInfo{Path: path, Name: filepath.Base(path)}
	f, err := os.Open(path)
	if err != nil {
		return fi, false, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fi, false, fmt.Errorf("report: %w", err)
	}
	fi.Bytes = st.Size()
	br := bufio.NewReaderSize(f, 1<<20)
	var t *ftype
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) != nil {
				return fi, false, nil
			}
			obj, isObj := v.(map[string]any)
			if !isObj {
				return fi, false, nil
			}
			if _, ok := obj["messages"]; !ok {
				return fi, false, nil
			}
			fi.Examples++
			t = merge(t, inferValue(v))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fi, false, fmt.Errorf("report: read %s: %w", path, err)
		}
	}
	if t == nil {
		t = &ftype{kind: "struct", fields: map[string]*ftype{"id": {kind: "string"}, "messages": {kind: "list", elem: &ftype{kind: "struct",
			fields: map[string]*ftype{"role": {kind: "string"}, "content": {kind: "string"}}, order: []string{"role", "content"}}}}, order: []string{"id", "messages"}}
	}
	fi.Features = t.features()
	return fi, true, nil
}

// sizeCategory is the Hub's size_categories bucket for n examples.
func sizeCategory(n int64) string {
	switch {
	case n < 1000:
		return "n<1K"
	case n < 10_000:
		return "1K<n<10K"
	case n < 100_000:
		return "10K<n<100K"
	case n < 1_000_000:
		return "100K<n<1M"
	case n < 10_000_000:
		return "1M<n<10M"
	}
	return "10M<n<100M"
}

type cardSplit struct {
	Name     string `yaml:"name"`
	NumBytes int64  `yaml:"num_bytes"`
	Examples int64  `yaml:"num_examples"`
}

type cardInfo struct {
	ConfigName   string      `yaml:"config_name,omitempty"`
	Features     []Feature   `yaml:"features"`
	Splits       []cardSplit `yaml:"splits"`
	DownloadSize int64       `yaml:"download_size"`
	DatasetSize  int64       `yaml:"dataset_size"`
}

type cardDataFile struct {
	Split string `yaml:"split"`
	Path  string `yaml:"path"`
}

type cardConfig struct {
	Name      string         `yaml:"config_name"`
	DataFiles []cardDataFile `yaml:"data_files"`
	Default   bool           `yaml:"default,omitempty"`
}

type cardHeader struct {
	License        any          `yaml:"license"` // one id, or the list of the inputs' ids
	TaskCategories []string     `yaml:"task_categories"`
	Language       []string     `yaml:"language"`
	Tags           []string     `yaml:"tags"`
	Pretty         string       `yaml:"pretty_name"`
	SizeCategories []string     `yaml:"size_categories"`
	DatasetInfo    any          `yaml:"dataset_info,omitempty"`
	Configs        []cardConfig `yaml:"configs"`
}

// defaultFile picks the default config: the first file in the trainer
// layout (id and messages of role and content only), else the first file.
func defaultFile(files []FileInfo) int {
	for i, f := range files {
		if isTrainerLayout(f.Features) {
			return i
		}
	}
	return 0
}

func isTrainerLayout(fs []Feature) bool {
	if len(fs) != 2 || fs[0].Name != "id" || fs[1].Name != "messages" || len(fs[1].List) != 2 {
		return false
	}
	names := fs[1].List[0].Name + "," + fs[1].List[1].Name
	return names == "role,content" || names == "content,role"
}

// configName names file i's config: "default" for a lone file, else the
// file's stem, with its extension added where two files share a stem
// (dialogues.jsonl and dialogues.parquet).
func configName(files []FileInfo, i int) string {
	if len(files) == 1 {
		return "default"
	}
	stem := func(f FileInfo) string { return strings.TrimSuffix(f.Name, filepath.Ext(f.Name)) }
	n := stem(files[i])
	for j, f := range files {
		if j != i && stem(f) == n {
			n = files[i].Name
			break
		}
	}
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, n)
}

// WriteCard writes a Hugging Face dataset card (README.md) for the data
// files, which lie in one directory: a YAML header (license, task
// categories, language, tags, size category, dataset_info with the
// features inferred from the files and a "train" split per file, configs
// with data_files), then how the data was made, from the run's Data.
// num_bytes is the file size on disk (the Hub recomputes Arrow sizes).
func WriteCard(w io.Writer, d *Data, files []FileInfo) error {
	if len(files) == 0 {
		return fmt.Errorf("report: card: no data files")
	}
	license := deriveLicense(d.options.License, d.InputLicenses)
	var total int64
	var infos []cardInfo
	var configs []cardConfig
	def := defaultFile(files)
	for i, f := range files {
		if i == def {
			total = f.Examples
		}
		name := configName(files, i)
		configs = append(configs, cardConfig{Name: name, DataFiles: []cardDataFile{{Split: "train", Path: f.Name}}, Default: len(files) > 1 && i == def})
		if f.Parquet && len(f.Features) == 0 {
			continue // a Parquet file whose schema was not read
		}
		ci := cardInfo{Features: f.Features, Splits: []cardSplit{{Name: "train", NumBytes: f.Bytes, Examples: f.Examples}},
			DownloadSize: f.Bytes, DatasetSize: f.Bytes}
		if len(files) > 1 {
			ci.ConfigName = name
		}
		infos = append(infos, ci)
	}
	h := cardHeader{
		License: license, TaskCategories: []string{"text-generation"}, Language: []string{"en"},
		Tags:   []string{"code", "synthetic", "multi-turn", "execution-feedback", "codefeedback"},
		Pretty: "codefeedback dialogues", SizeCategories: []string{sizeCategory(total)}, Configs: configs,
	}
	switch {
	case len(files) == 1 && len(infos) == 1:
		h.DatasetInfo = infos[0]
	case len(infos) > 0:
		h.DatasetInfo = infos
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("report: card header: %w", err)
	}
	enc.Close()
	b.WriteString("---\n\n")
	writeCardBody(&b, d, files, total)
	_, err := w.Write(b.Bytes())
	return err
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeCardBody writes the card's text. It names files by their base
// names only: a published card carries no path of the machine that made it.
func writeCardBody(b *bytes.Buffer, d *Data, files []FileInfo, total int64) {
	m := d.Manifest
	fmt.Fprintf(b, "# codefeedback dialogues\n\n")
	fmt.Fprintf(b, "%d multi-turn coding dialogues grounded in real code execution, synthesized by %s %s from the pipeline file `%s`", total, m.Program, m.Version, filepath.Base(m.Pipeline))
	if !m.Finished.IsZero() {
		fmt.Fprintf(b, " (run finished %s, status %s)", m.Finished.Format("2006-01-02 15:04 UTC"), m.Status)
	}
	b.WriteString(". Every execution turn holds the output of an actual sandboxed run.\n\n")
	b.WriteString("## Files\n\n| config | file | from stage | dialogues | bytes |\n|---|---|---|---:|---:|\n")
	for i, f := range files {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d |\n", configName(files, i), mdCell(f.Name), mdCell(f.From), f.Examples, f.Bytes)
	}
	loader := "json"
	if files[defaultFile(files)].Parquet {
		loader = "parquet"
	}
	b.WriteString("\n```python\nfrom datasets import load_dataset\nds = load_dataset(\"" + loader + "\", data_files=\"" + files[defaultFile(files)].Name + "\", split=\"train\")\n```\n\n")
	b.WriteString("## How it was made\n\n")
	if len(m.Inputs) > 0 {
		b.WriteString("Inputs:\n\n")
		for i, in := range m.Inputs {
			lic := "licence unknown"
			if i < len(d.InputLicenses) && d.InputLicenses[i].License != "" {
				lic = "licence " + d.InputLicenses[i].License + " (from " + d.InputLicenses[i].From + ")"
			}
			fmt.Fprintf(b, "- `%s` (%s, %d items, sha256 %s, %s)\n", filepath.Base(in.Path), in.Format, in.Items, in.SHA256, lic)
		}
		b.WriteString("\n")
		if d.options.License == "" {
			b.WriteString("The card's licence is derived from the inputs' licences (a benchmark file recognised by its SHA-256, a `FILE.license` file, or a `README.md` dataset card beside the input); it is `unknown` while any input's is. `codefeedback report --license ID` sets it.\n\n")
		}
	}
	if m.Executor != "" {
		fmt.Fprintf(b, "Sandbox: `%s`.\n\n", m.Executor)
	}
	b.WriteString("| stage | type | status | in | out | failed | model requests | tokens | cost (USD) |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range m.Stages {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %d | %d | %d | %.4f |\n", mdCell(s.Name), mdCell(s.Type), s.Status, s.Counts.In, s.Counts.Out,
			s.Counts.Failed, s.Usage.Requests, s.Usage.PromptTokens+s.Usage.CompletionTokens, s.Usage.CostUSD)
	}
	writeCost(b, m)
	b.WriteString("\nStage settings and versions (the version key hashes the stage's settings, prompt texts and model parameters):\n\n```yaml\n")
	b.WriteString(settingsYAML(m))
	b.WriteString("```\n")
	ds := d.Dataset
	b.WriteString("\nModels: ")
	if len(ds.Models) == 0 {
		b.WriteString("none recorded on the dialogues (dialogues from model-free stages, such as mutation-based correction, use none).\n")
	} else {
		b.WriteString(countList(ds.Models) + ".\n")
	}
	b.WriteString("\nPrompt versions: ")
	if len(ds.Prompts) == 0 {
		b.WriteString("none recorded on the dialogues.\n")
	} else {
		b.WriteString(countList(ds.Prompts) + ".\n")
	}
	fmt.Fprintf(b, "\n## Contents\n\n- dialogues: %d (counted from stage `%s`)\n- execution turns: %d\n", ds.Dialogues, ds.From, ds.Executions)
	counts := []namedCounts{{"methods", ds.Methods}, {"final status", ds.FinalStatus}}
	counts = append(counts, ds.labelCounts()...)
	counts = append(counts, namedCounts{"feedback categories", ds.Feedback}, namedCounts{"messages per dialogue", ds.Messages})
	for _, c := range counts {
		if len(c.m) > 0 {
			fmt.Fprintf(b, "- %s: %s\n", c.name, countList(c.m))
		}
	}
	for _, it := range ds.Outcomes {
		fmt.Fprintf(b, "- execution %d outcomes: %s\n", it.Iteration, countList(it.Kinds))
	}
	b.WriteString("\n## Benchmark leakage\n\n")
	if d.BenchmarksMissing > 0 {
		fmt.Fprintf(b, "**%d benchmark(s) named in the audit settings were not found, so the data was not checked against them.**\n\n", d.BenchmarksMissing)
	}
	var audits []string
	for _, s := range m.Stages {
		if spec, ok := section.For(s.Type); ok && spec.Leakage && s.Status != "not-selected" && s.Status != "waiting-for-merge" {
			audits = append(audits, "`"+s.Name+"`")
		}
	}
	switch {
	case len(audits) == 0:
		b.WriteString("No audit stage ran in this pipeline: the data was not checked against benchmarks.\n")
	case len(d.Leakage) == 0:
		fmt.Fprintf(b, "The audit stage %s ran, but had no benchmark files to check against (set `missing: fail` to make that an error, or fetch the benchmarks): the data was not checked for leakage.\n", strings.Join(audits, ", "))
	default:
		b.WriteString("| audit stage | benchmark | dialogues audited | shared code lines | flagged |\n|---|---|---:|---:|---:|\n")
		for _, l := range d.Leakage {
			fmt.Fprintf(b, "| %s | %s | %d | %.2f%% | %d |\n", mdCell(l.Stage), mdCell(l.Benchmark), l.Dialogues, 100*l.LineRatio, l.Flagged)
		}
		b.WriteString("\nFlagged dialogues are removed when the audit decontaminates (its default), or carry an `audit` label otherwise.\n")
	}
	b.WriteString("\n## Limits\n\nThe dialogues are synthetic. Execution outputs are real, but assistant explanations were written by a model or a template and may be wrong where the output does not show it.\n")
}

// countList renders counts as "a (3), b (1)", largest first.
func countList(m map[string]int) string {
	return tally.Join(m, "%s (%d)", "")
}

// settingsYAML renders every stage's settings as one YAML document, keyed
// by stage name, with each stage's version key.
func settingsYAML(m *pipeline.Manifest) string {
	var b strings.Builder
	for _, s := range m.Stages {
		var v any
		if len(s.Settings) > 0 && json.Unmarshal(s.Settings, &v) != nil {
			v = string(s.Settings)
		}
		doc := map[string]any{s.Name: map[string]any{"type": s.Type, "version_key": clip(s.Key, 13), "settings": v}}
		var out bytes.Buffer
		enc := yaml.NewEncoder(&out)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			fmt.Fprintf(&b, "%s: %q\n", s.Name, string(s.Settings))
			continue
		}
		enc.Close()
		b.Write(out.Bytes())
	}
	return b.String()
}

// writeCost states what this run cost and what every run on the run
// directory cost together, with the earlier runs.
func writeCost(b *bytes.Buffer, m *pipeline.Manifest) {
	t := m.Total
	if t.Runs == 0 { // a manifest written before totals existed
		t = pipeline.RunTotal{Runs: 1, Usage: m.Usage}
	}
	this := m.Summary()
	fmt.Fprintf(b, "\nModel usage and cost: this run %d requests, %d tokens, %.4f USD, %d retries; all %d runs on this run directory %d requests, %d tokens, %.4f USD, %d retries.\n",
		this.Usage.Requests, this.Usage.PromptTokens+this.Usage.CompletionTokens, this.Usage.CostUSD, this.Retries,
		t.Runs, t.Usage.Requests, t.Usage.PromptTokens+t.Usage.CompletionTokens, t.Usage.CostUSD, t.Retries)
	if u := this.Usage; u.BatchRequests > 0 {
		fmt.Fprintf(b, "%d of this run's requests were answered through provider batches, which saved %.4f USD against live prices.\n", u.BatchRequests, u.BatchSavedUSD)
	}
	if len(m.History) == 0 {
		return
	}
	b.WriteString("\n| run started | version | status | requests | tokens | cost (USD) | retries | items computed |\n|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, h := range append(append([]pipeline.RunSummary(nil), m.History...), this) {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %.4f | %d | %d |\n", h.Started.Format("2006-01-02 15:04:05 UTC"), mdCell(h.Version), h.Status,
			h.Usage.Requests, h.Usage.PromptTokens+h.Usage.CompletionTokens, h.Usage.CostUSD, h.Retries, h.Fresh)
	}
}
