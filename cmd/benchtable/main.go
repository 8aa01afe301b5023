// Command benchtable reads `go test -bench` output on stdin and prints one
// table of every benchmark's figures, ratios to an in-process baseline
// first (metrics named x-*, *baseline*, ratio*, *ideal), so a regression
// shows up at a glance. `make bench` pipes the whole suite through it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

type row struct {
	pkg, bench, metric string
	value              float64
	ratio              bool
}

func isRatio(m string) bool {
	m = strings.ToLower(m)
	return strings.HasPrefix(m, "x-") || strings.HasPrefix(m, "x_") || strings.Contains(m, "baseline") ||
		strings.Contains(m, "ratio") || strings.Contains(m, "ideal") || strings.Contains(m, "/17k")
}

// parse reads benchmark result lines: Name-P  N  v1 unit1  v2 unit2 ...
func parse(r io.Reader) ([]row, error) {
	var rows []row
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i]
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			rows = append(rows, row{pkg: pkg, bench: strings.TrimPrefix(name, "Benchmark"), metric: f[i+1], value: v, ratio: isRatio(f[i+1])})
		}
	}
	return rows, sc.Err()
}

func main() {
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark results on stdin")
		os.Exit(1)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ratio && !rows[j].ratio })
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "%-28s %-44s %-28s %14s\n", "package", "benchmark", "figure", "value")
	section := ""
	for _, r := range rows {
		s := "figures"
		if r.ratio {
			s = "ratios to a baseline measured in the same run"
		}
		if s != section {
			section = s
			fmt.Fprintf(w, "-- %s\n", s)
		}
		pkg := r.pkg[strings.LastIndex(r.pkg, "codefeedback/")+len("codefeedback/"):]
		fmt.Fprintf(w, "%-28s %-44s %-28s %14.4g\n", pkg, r.bench, r.metric, r.value)
	}
}
