package leak

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable renders a report for a terminal: settings, one row per
// benchmark and an overall row, the most frequent shared lines per benchmark
// (so a reader sees whether they are generic), and up to maxFindings
// findings (all when maxFindings < 0).
func WriteTable(w io.Writer, rep *Report, maxFindings int) error {
	o := rep.Options
	imports := "dropped"
	if o.Lines.KeepImports {
		imports = "kept"
	}
	var b strings.Builder
	emb := ""
	if o.EmbedThreshold > 0 {
		emb = fmt.Sprintf(" or embedding cosine >= %.2f", o.EmbedThreshold)
	}
	fp := ""
	if !o.Fingerprints.Off {
		fp = fmt.Sprintf(" or code fingerprints (%d-token k-grams) covering >= %.2f of a task's solution or tests (renamed: >= %.2f)",
			o.Fingerprints.K, o.Fingerprints.Threshold, o.Fingerprints.RenamedThreshold)
	}
	if !o.Statements.Off {
		fp += fmt.Sprintf(" or solution statements (renamed, any order) covering >= %.2f of a task's solution, or a table or string only one task holds",
			o.Statements.Threshold)
	}
	fmt.Fprintf(&b, "audit: %d dialogues, %d code lines (windows of %d lines, lines >= %d chars, imports %s; %d-grams; flag: line score > %.2f or statement n-grams weighing >= %d%s%s)\n\n",
		rep.Dialogues, rep.CodeLines, o.Window, o.Lines.MinChars, imports, o.N, o.LineThreshold, o.MinNGrams, fp, emb)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	embHead, embCell := "", func(BenchReport) string { return "" }
	if o.EmbedThreshold > 0 {
		embHead, embCell = "\tflagged by embedding", func(br BenchReport) string { return fmt.Sprintf("\t%d", br.EmbedFlagged) }
	}
	fmt.Fprintln(tw, "benchmark\ttasks\tshared lines\tline ratio\tflagged by lines\tflagged by n-gram\tflagged by fingerprint\tflagged by statements\tflagged by literal"+embHead+"\tflagged\ttasks hit")
	for _, br := range rep.Benchmarks {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f%%\t%d\t%d\t%d\t%d\t%d%s\t%d\t%d\n", br.Name, br.Tasks, br.SharedLines, 100*br.LineRatio,
			br.LineFlagged, br.NGramFlagged, br.FPFlagged, br.StmtFlagged, br.LitFlagged, embCell(br), br.Flagged, br.TasksHit)
	}
	pad := "\t\t\t\t\t"
	if o.EmbedThreshold > 0 {
		pad += "\t"
	}
	fmt.Fprintf(tw, "overall\t\t%d\t%.2f%%%s\t%d\t\n", rep.SharedLines, 100*rep.LineRatio, pad, rep.Flagged)
	tw.Flush()
	for _, br := range rep.Benchmarks {
		if len(br.TopLines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nmost shared lines with %s (dialogues: line):\n", br.Name)
		for _, l := range br.TopLines {
			fmt.Fprintf(&b, "  %6d  %s\n", l.Dialogues, l.Line)
		}
	}
	if j := rep.Judge; j != nil {
		fmt.Fprintf(&b, "\nparaphrase judge: calibrated on %d of %d labelled pairs; %d pairs judged, %d the same task, %d unknown (unreadable after a repair request)\n",
			j.CalibrationAgreed, j.CalibrationPairs, j.Pairs, j.Same, j.Unknown)
		for _, f := range j.UnknownPairs {
			fmt.Fprintf(&b, "  unknown: %s vs %s %s\n", f.DialogueID, f.Benchmark, f.TaskID)
		}
	}
	if len(rep.Findings) > 0 {
		n := len(rep.Findings)
		if maxFindings >= 0 && n > maxFindings {
			n = maxFindings
		}
		fmt.Fprintf(&b, "\nfindings (%d of %d; --json lists all):\n", n, len(rep.Findings))
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "dialogue\tbenchmark\ttask\tmethod\tscore\tevidence")
		for _, f := range rep.Findings[:n] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3g\t%s\n", f.DialogueID, f.Benchmark, f.TaskID, f.Method, f.Score, truncate(f.Evidence, 100))
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
