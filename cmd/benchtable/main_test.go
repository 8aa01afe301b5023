package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `goos: linux
pkg: github.com/codefeedback/codefeedback/pipeline
BenchmarkEngine/3stages-2   	       1	1234 ns/op	  22200 items/s	  2.7 x-baseline-time
BenchmarkX-2 notanumber
PASS
pkg: github.com/codefeedback/codefeedback/executors/bwrap
BenchmarkPaths/pool-2   	     100	 8.2 ms/op	 121.9 runs/s	 2.06 ratio
`
	rows, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"github.com/codefeedback/codefeedback/pipeline", "Engine/3stages", "ns/op", 1234, false},
		{"github.com/codefeedback/codefeedback/pipeline", "Engine/3stages", "items/s", 22200, false},
		{"github.com/codefeedback/codefeedback/pipeline", "Engine/3stages", "x-baseline-time", 2.7, true},
		{"github.com/codefeedback/codefeedback/executors/bwrap", "Paths/pool", "ms/op", 8.2, false},
		{"github.com/codefeedback/codefeedback/executors/bwrap", "Paths/pool", "runs/s", 121.9, false},
		{"github.com/codefeedback/codefeedback/executors/bwrap", "Paths/pool", "ratio", 2.06, true},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(rows), rows, len(want))
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}
