package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// Bar is one labelled value of a chart.
type Bar = section.Bar

// Series is one row of a stacked chart (section.Series).
type Series = section.Series

// Chart is one figure of the report: a section.Chart with the methods that
// draw it.
type Chart section.Chart

// palette: readable on white, distinguishable in a stacked bar; "pass" and
// failure-like keys get fixed colours so charts agree with each other.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func colorFor(label string, i int) string {
	switch label {
	case "pass", "passed", "kept", "ok":
		return "#59a14f"
	case "timeout":
		return "#edc948"
	case "dropped", "fail", "failed", "flagged":
		return "#e15759"
	}
	return palette[i%len(palette)]
}

func (c Chart) format(v float64) string {
	if c.Percent {
		return fmt.Sprintf("%.2f%%", 100*v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// SVG draws the chart as an inline SVG element. All text is escaped.
func (c Chart) SVG() template.HTML {
	switch {
	case len(c.Rows) > 0:
		return c.stacked()
	case c.Histogram:
		return c.vertical()
	default:
		return c.horizontal()
	}
}

const (
	chartW = 560
	rowH   = 22
)

func maxOf(bars []Bar) float64 {
	m := 0.0
	for _, b := range bars {
		m = math.Max(m, b.Value)
	}
	return m
}

func labelWidth(labels []string) int {
	n := 4
	for _, l := range labels {
		n = max(n, len([]rune(l)))
	}
	return min(n*7+10, 220)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (c Chart) horizontal() template.HTML {
	labels := make([]string, len(c.Bars))
	for i, b := range c.Bars {
		labels[i] = b.Label
	}
	lw := labelWidth(labels)
	plot := chartW - lw - 70
	h := len(c.Bars)*rowH + 8
	m := maxOf(c.Bars)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		chartW, h, chartW, h, html.EscapeString(c.Title))
	for i, bar := range c.Bars {
		y := 4 + i*rowH
		w := 0.0
		if m > 0 {
			w = bar.Value / m * float64(plot)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="lbl">%s</text>`, lw-6, y+15, html.EscapeString(clip(bar.Label, 30)))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
			lw, y+3, math.Max(w, 1), rowH-6, colorFor(bar.Label, i), html.EscapeString(bar.Label), c.format(bar.Value))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="val">%s</text>`, float64(lw)+math.Max(w, 1)+4, y+15, c.format(bar.Value))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func (c Chart) vertical() template.HTML {
	const h, top, bottom = 170, 18, 22
	n := max(len(c.Bars), 1)
	bw := min(48, (chartW-20)/n)
	w := min(chartW, n*bw+20)
	m := maxOf(c.Bars)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		w, h, w, h, html.EscapeString(c.Title))
	plot := float64(h - top - bottom)
	fmt.Fprintf(&b, `<line x1="8" y1="%d" x2="%d" y2="%d" class="axis"/>`, h-bottom, w-8, h-bottom)
	for i, bar := range c.Bars {
		x := 10 + i*bw
		bh := 0.0
		if m > 0 {
			bh = bar.Value / m * plot
		}
		y := float64(h-bottom) - bh
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s: %s</title></rect>`,
			x+3, y, bw-6, bh, colorFor(bar.Label, 0), html.EscapeString(bar.Label), c.format(bar.Value))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" class="val">%s</text>`, x+bw/2, y-4, c.format(bar.Value))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="lbl">%s</text>`, x+bw/2, h-6, html.EscapeString(clip(bar.Label, bw/7+1)))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func (c Chart) stacked() template.HTML {
	labels := make([]string, len(c.Rows))
	var keys []string
	seen := map[string]int{}
	m := 0.0
	for i, r := range c.Rows {
		labels[i] = r.Label
		m = math.Max(m, r.Total)
		for _, p := range r.Parts {
			if _, ok := seen[p.Label]; !ok {
				seen[p.Label] = len(keys)
				keys = append(keys, p.Label)
			}
		}
	}
	lw := labelWidth(labels)
	plot := chartW - lw - 50
	legendRows := (len(keys) + 3) / 4
	h := len(c.Rows)*rowH + 8 + legendRows*18 + 6
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		chartW, h, chartW, h, html.EscapeString(c.Title))
	for i, r := range c.Rows {
		y := 4 + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="lbl">%s</text>`, lw-6, y+15, html.EscapeString(clip(r.Label, 30)))
		x := float64(lw)
		for _, p := range r.Parts {
			w := 0.0
			if m > 0 {
				w = p.Value / m * float64(plot)
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s</title></rect>`,
				x, y+3, w, rowH-6, colorFor(p.Label, seen[p.Label]), html.EscapeString(r.Label), html.EscapeString(p.Label), c.format(p.Value))
			x += w
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="val">%s</text>`, x+4, y+15, c.format(r.Total))
	}
	ly := len(c.Rows)*rowH + 12
	for i, k := range keys {
		x := 10 + (i%4)*(chartW/4)
		y := ly + (i/4)*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="lbl">%s</text>`,
			x, y, colorFor(k, i), x+14, y+9, html.EscapeString(clip(k, 18)))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
