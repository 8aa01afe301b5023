package sqlenv

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TableLimits bound a rendered table.
type TableLimits struct {
	Rows  int // rows shown; the rest are counted
	Width int // characters per cell; longer values are cut with "…"
}

// DefaultTableLimits keep an observation readable.
var DefaultTableLimits = TableLimits{Rows: 50, Width: 60}

// ShownRows is how many of n rows RenderTable shows under lim.
func ShownRows(n int, lim TableLimits) int {
	if lim.Rows > 0 && n > lim.Rows {
		return lim.Rows
	}
	return n
}

// RenderTable draws rows as a text table that stays a table whatever the
// values hold: newlines, tabs and other control characters are shown
// escaped (\n), NULL as NULL, and wide values are cut.
func RenderTable(cols []string, rows [][]any, lim TableLimits) string {
	if len(cols) == 0 {
		return ""
	}
	n := ShownRows(len(rows), lim)
	cells := make([][]string, 0, n+1)
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = cell(c, lim.Width)
	}
	cells = append(cells, head)
	for _, r := range rows[:n] {
		line := make([]string, len(cols))
		for i := range cols {
			var v any
			if i < len(r) {
				v = r[i]
			}
			line[i] = cell(display(v), lim.Width)
		}
		cells = append(cells, line)
	}
	w := make([]int, len(cols))
	for _, line := range cells {
		for i, c := range line {
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	sep := func() {
		b.WriteByte('+')
		for _, x := range w {
			b.WriteString(strings.Repeat("-", x+2))
			b.WriteByte('+')
		}
		b.WriteByte('\n')
	}
	row := func(line []string) {
		b.WriteByte('|')
		for i, c := range line {
			b.WriteByte(' ')
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)+1))
			b.WriteByte('|')
		}
		b.WriteByte('\n')
	}
	sep()
	row(cells[0])
	sep()
	for _, line := range cells[1:] {
		row(line)
	}
	sep()
	if len(rows) > n {
		fmt.Fprintf(&b, "(%d rows, first %d shown)\n", len(rows), n)
	} else {
		fmt.Fprintf(&b, "(%d row%s)\n", len(rows), plural(len(rows)))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func display(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return fmt.Sprintf("0x%X", x)
	case Decimal:
		return string(x)
	case float64:
		return pyFloat(x)
	}
	return fmt.Sprint(v)
}

// escapeControl writes r's escape (\n, \r, \t, \xNN, as Python's repr)
// when it is a control character, and reports whether it did.
func escapeControl(b *strings.Builder, r rune) bool {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x20 || r == 0x7f:
		fmt.Fprintf(b, `\x%02x`, r)
	default:
		return false
	}
	return true
}

// cell escapes control characters and cuts the value to width runes.
func cell(s string, width int) string {
	var b strings.Builder
	for _, r := range s {
		if !escapeControl(&b, r) {
			b.WriteRune(r)
		}
	}
	out := b.String()
	if width > 1 && utf8.RuneCountInString(out) > width {
		return string([]rune(out)[:width-1]) + "…"
	}
	return out
}
