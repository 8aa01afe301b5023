package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// TestColumnReaderMatchesRowReader: the column reader gives, row for row,
// the dialogues and errors the reflection row reader gives, and the same
// inspect report, on the real Code-Feedback sample written by codefeedback
// (native and Code-Feedback layouts) and by DuckDB (optional, dictionary
// encoded columns), and on files of many row groups holding bad records
// (native layout; Code-Feedback with string and with integer ids).
func TestColumnReaderMatchesRowReader(t *testing.T) {
	src := sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
	dir := t.TempDir()
	ctx := context.Background()
	files := map[string]string{}
	for _, to := range []ExportFormat{ExportParquet, ExportCodeFeedback} {
		out := filepath.Join(dir, string(to)+".parquet")
		if _, err := Export(ctx, src, out, ExportOptions{To: to, Compression: "zstd"}); err != nil {
			t.Fatal(err)
		}
		files["sample-"+string(to)] = out
	}
	bad := filepath.Join(dir, "bad.parquet")
	pw, err := createParquetDialogues(bad, ParquetCompression("zstd"), RowGroupBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1200; i++ {
		d := variedDialogue(i)
		switch i % 97 {
		case 5:
			d.Messages[2].Role = "narrator"
		case 9:
			d.Messages = nil
		case 11:
			d.Model, d.Labels = "m1", map[string]string{"k": fmt.Sprint(i)}
		}
		if err := pw.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	files["bad-records"] = bad
	// Code-Feedback layouts, string and integer ids, with bad rows among
	// the first (the samples skip them) and empty ids (named by hash).
	cfRow := func(i int) []ParquetMessage {
		d := variedDialogue(i)
		var ms []ParquetMessage
		for _, m := range ToCodeFeedback(&d).Messages {
			ms = append(ms, ParquetMessage(m))
		}
		switch {
		case i == 0 || i%89 == 7:
			ms[1].Role = "narrator"
		case i == 2 || i%89 == 8:
			ms = nil
		}
		return ms
	}
	cfStr := filepath.Join(dir, "bad-cf.parquet")
	sw := testParquetWriter(t, cfStr, func(r *CodeFeedbackRow) int64 { return messagesBytes(r.Messages) }, 64<<10)
	cfInt := filepath.Join(dir, "bad-cf-int.parquet")
	iw := testParquetWriter(t, cfInt, func(r *CodeFeedbackIntRow) int64 { return messagesBytes(r.Messages) }, 64<<10)
	for i := 0; i < 1200; i++ {
		id := fmt.Sprint("cf-", i)
		if i%5 == 3 {
			id = ""
		}
		if err := sw.add(CodeFeedbackRow{ID: id, Messages: cfRow(i)}); err != nil {
			t.Fatal(err)
		}
		if err := iw.add(CodeFeedbackIntRow{ID: int64(1000 + i), Messages: cfRow(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []interface{ Close() error }{sw, iw} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files["bad-records-codefeedback"], files["bad-records-codefeedback-int"] = cfStr, cfInt
	duck := filepath.Join(dir, "duckdb.parquet")
	duckdbTimer(t)("write", src, duck)
	files["sample-duckdb"] = duck

	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			fr, rowRGs, err := openParquetRowGroups(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			fc, colRGs, err := openParquetColumnGroups(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fc.Close()
			rows, bads := 0, 0
			for i := range rowRGs {
				if _, ok := colRGs[i].rows.(*columnRows); !ok {
					t.Fatalf("row group %d: read by %T, not the column reader", i, colRGs[i].rows)
				}
				for {
					want, werr := rowRGs[i].Read()
					got, gerr := colRGs[i].Read()
					if fmt.Sprint(werr) != fmt.Sprint(gerr) {
						t.Fatalf("row %d: column reader error %v, row reader %v", rows+1, gerr, werr)
					}
					if werr == io.EOF {
						break
					}
					var re *RecordError
					if werr != nil && !errors.As(werr, &re) {
						t.Fatal(werr)
					}
					if werr != nil {
						bads++
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("row %d: column reader\n%+v\nrow reader\n%+v", rows+1, got, want)
					}
					rows++
				}
				rowRGs[i].Close()
				colRGs[i].Close()
			}
			if rows == 0 || strings.HasPrefix(name, "bad-records") && (bads == 0 || len(rowRGs) < 4) {
				t.Fatalf("%d rows, %d bad, %d row groups: the file does not test what it should", rows, bads, len(rowRGs))
			}
			if got, want := inspectTwice(t, path, 5); got != want {
				t.Errorf("column inspect\n%s\nrow reader\n%s", got, want)
			}
		})
	}
}

// BenchmarkInspectColumnsVsRows: inspect of one Parquet file (20,000 varied
// dialogues, Code-Feedback layout) by the column reader against the
// reflection row reader, alternating, in the same process: x-rows below 1
// means the column reader is faster (wall and CPU; medians of 5 pairs).
func BenchmarkInspectColumnsVsRows(b *testing.B) {
	dir := b.TempDir()
	in, pq := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "in.parquet")
	writeCodeFeedbackJSONL(b, in, 20_000)
	if _, err := Export(context.Background(), in, pq, ExportOptions{To: ExportCodeFeedback, Compression: "zstd"}); err != nil {
		b.Fatal(err)
	}
	run := func(open func(string, ...Option) (*os.File, []*parquetRowGroup, error)) (float64, float64) {
		start, cpu0 := time.Now(), benchtest.CPUSeconds(b)
		f, rgs, err := open(pq)
		if err != nil {
			b.Fatal(err)
		}
		rep := newReport(pq)
		if err := rep.inspectRowGroups(context.Background(), rgs, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if rep.Records != 20_000 {
			b.Fatalf("%d records", rep.Records)
		}
		return time.Since(start).Seconds(), benchtest.CPUSeconds(b) - cpu0
	}
	var cw, cc, rw, rc []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for pair := 0; pair < 5; pair++ {
			w, c := run(openParquetColumnGroups)
			cw, cc = append(cw, w), append(cc, c)
			w, c = run(openParquetRowGroups)
			rw, rc = append(rw, w), append(rc, c)
		}
	}
	b.StopTimer()
	b.ReportMetric(median(cw), "s/columns")
	b.ReportMetric(median(rw), "s/rows")
	b.ReportMetric(median(cw)/median(rw), "x-rows")
	b.ReportMetric(median(cc)/median(rc), "x-rows-cpu")
}

// testParquetWriter opens a zstd Parquet writer of T rows at path whose row
// groups close at rowGroup bytes by size, or fails t.
func testParquetWriter[T any](t *testing.T, path string, size func(*T) int64, rowGroup int64) *parquetWriter[T] {
	t.Helper()
	w, err := newParquetWriter(path, size, ParquetCompression("zstd"), RowGroupBytes(rowGroup))
	if err != nil {
		t.Fatal(err)
	}
	return w
}
