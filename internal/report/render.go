package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

//go:embed report.html.tmpl
var reportTemplate string

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":       func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"pct2":      func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) },
	"deref":     func(b *bool) bool { return b != nil && *b },
	"usd":       func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"secs":      func(v float64) string { return fmt.Sprintf("%.1f s", v) },
	"num":       func(v float64) string { return Chart{}.format(v) },
	"short":     func(s string, n int) string { return clip(s, n) },
	"rfc":       func(t time.Time) string { return t.Format(time.RFC3339) },
	"dur":       func(d time.Duration) string { return d.Round(time.Microsecond).String() },
	"tokens":    func(u pipeline.Usage) int64 { return u.PromptTokens + u.CompletionTokens },
	"highlight": Highlight,
}).Parse(reportTemplate))

// part is a piece of a message: prose, or a fenced code block.
type part struct {
	Code bool
	Lang string
	Text string
	HTML template.HTML
}

// splitFences splits Markdown-ish content into prose and ``` code blocks;
// an unclosed fence runs to the end.
func splitFences(s string) []part {
	var parts []part
	for s != "" {
		i := strings.Index(s, "```")
		if i < 0 {
			if t := strings.Trim(s, "\n"); t != "" {
				parts = append(parts, part{Text: t})
			}
			break
		}
		if t := strings.Trim(s[:i], "\n"); t != "" {
			parts = append(parts, part{Text: t})
		}
		s = s[i+3:]
		nl := strings.IndexByte(s, '\n')
		lang := ""
		if nl >= 0 && !strings.Contains(s[:nl], "```") {
			lang = strings.TrimSpace(s[:nl])
			s = s[nl+1:]
		}
		code := s
		if j := strings.Index(s, "```"); j >= 0 {
			code, s = s[:j], s[j+3:]
			s = strings.TrimPrefix(s, "\n")
		} else {
			s = ""
		}
		code = strings.TrimRight(code, "\n")
		parts = append(parts, part{Code: true, Lang: lang, Text: code, HTML: Highlight(code, lang)})
	}
	return parts
}

type messageView struct {
	Role     string
	Parts    []part
	Exec     *schema.Execution
	ExecCode template.HTML
	Outcome  string
	Feedback *schema.Feedback
}

type dialogueView struct {
	schema.Dialogue
	Views  []messageView
	Labels []Bar // label pairs, sorted (Value unused)
}

func viewDialogue(d schema.Dialogue) dialogueView {
	v := dialogueView{Dialogue: d}
	for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
		v.Labels = append(v.Labels, Bar{Label: k + "=" + clip(d.Labels[k], 60)})
	}
	for _, m := range d.Messages {
		mv := messageView{Role: m.Role, Exec: m.Exec, Feedback: m.Feedback}
		if m.Role == schema.RoleExecution {
			mv.Parts = []part{{Code: true, Text: m.Content, HTML: template.HTML(template.HTMLEscapeString(m.Content))}}
		} else {
			mv.Parts = splitFences(m.Content)
		}
		if m.Exec != nil {
			mv.ExecCode = Highlight(m.Exec.Code, m.Exec.Language)
			mv.Outcome = Outcome(m.Exec)
		}
		v.Views = append(v.Views, mv)
	}
	return v
}

// page is the template's input.
type page struct {
	*Data
	Dialogues []dialogueView
	Blob      *Data
	Datasets  []Chart
}

// WriteHTML renders the report as one self-contained HTML page: inline CSS,
// inline SVG charts, a small inline script for the id search, no external
// resources. All data goes through html/template's escaping.
func WriteHTML(w io.Writer, d *Data) error {
	p := page{Data: d, Blob: d}
	for _, dl := range d.sample {
		p.Dialogues = append(p.Dialogues, viewDialogue(dl))
	}
	p.Datasets = d.datasetCharts()
	if err := tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	return nil
}

// datasetCharts are the charts of the dataset section.
func (d *Data) datasetCharts() []Chart {
	ds := d.Dataset
	var cs []Chart
	if len(ds.Messages) > 0 {
		cs = append(cs, Chart{ID: "chart-dataset-turns", Title: "Messages per dialogue", Bars: sortedBars(ds.Messages), Histogram: true})
	}
	if len(ds.Outcomes) > 0 {
		var rows []Series
		for _, it := range ds.Outcomes {
			r := Series{Label: fmt.Sprintf("execution %d", it.Iteration)}
			for _, b := range sortedBars(it.Kinds) {
				r.Parts = append(r.Parts, b)
				r.Total += b.Value
			}
			rows = append(rows, r)
		}
		cs = append(cs, Chart{ID: "chart-dataset-outcomes", Title: "Execution outcomes per iteration (n-th execution turn of a dialogue)", Rows: rows})
	}
	type counts struct {
		id, title string
		m         map[string]int
	}
	all := []counts{{"chart-dataset-methods", "Dialogues per method", ds.Methods}, {"chart-dataset-status", "Final status", ds.FinalStatus}}
	for _, l := range section.DatasetLabels() {
		if l.Chart != "" && l.Marked == "" {
			all = append(all, counts{section.ChartID("dataset", l.Key), l.Chart, ds.Labels[l.Key]})
		}
	}
	all = append(all, counts{"chart-dataset-feedback", "Feedback categories", ds.Feedback})
	for _, c := range all {
		if len(c.m) > 0 {
			cs = append(cs, Chart{ID: c.id, Title: c.title, Bars: sortedBars(c.m)})
		}
	}
	return cs
}
