package schema

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// inspectTwice renders Inspect's report of a Parquet file of dialogues
// and the report one pass of the row reader gives (bad records counted as
// Inspect counts them), with the same samples.
func inspectTwice(t *testing.T, path string, samples int) (got, want string) {
	t.Helper()
	rep, err := Inspect(context.Background(), path, samples)
	if err != nil {
		t.Fatal(err)
	}
	seq := newReport(path)
	seq.Kind, seq.Format, seq.Schema = rep.Kind, rep.Format, rep.Schema
	r, err := openParquetDialogues(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for d, err := range All(context.Background(), r) {
		if err != nil {
			if err := seq.bad(err); err != nil {
				t.Fatal(err)
			}
			continue
		}
		seq.addDialogue(&d, samples)
	}
	var g, w strings.Builder
	rep.Render(&g)
	seq.Render(&w)
	return g.String(), w.String()
}

// rowGroups is the number of row groups of the Parquet file at path.
func rowGroups(t *testing.T, path string) int {
	t.Helper()
	f, rgs, err := openParquetRowGroups(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range rgs {
		rg.Close()
	}
	f.Close()
	return len(rgs)
}

// TestInspectRowGroupsMatchSequential: a file of many row groups, counted
// row group by row group on several goroutines, reports exactly what one
// sequential pass reports (samples and all), for each layout.
func TestInspectRowGroupsMatchSequential(t *testing.T) {
	dir := t.TempDir()
	var ds []Dialogue
	for i := 0; i < 3000; i++ {
		ds = append(ds, variedDialogue(i))
	}
	for _, layout := range []ExportFormat{ExportNative, ExportCodeFeedback} {
		path := filepath.Join(dir, string(layout)+".parquet")
		w, err := NewDialogueWriter(path, ExportOptions{To: layout, Compression: "zstd"})
		if err != nil {
			t.Fatal(err)
		}
		if layout == ExportNative {
			// Small row groups: the native writer takes the option.
			pw, err := createParquetDialogues(path, ParquetCompression("zstd"), RowGroupBytes(256<<10))
			if err != nil {
				t.Fatal(err)
			}
			w = &DialogueWriter{write: func(d *Dialogue) error { return pw.Write(*d) }, close: pw.Close, abort: pw.Abort}
		}
		for i := range ds {
			if err := w.Write(&ds[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		n := rowGroups(t, path)
		if layout == ExportNative && n < 4 {
			t.Fatalf("%s: %d row groups, want several", layout, n)
		}
		if got, want := inspectTwice(t, path, 7); got != want {
			t.Errorf("%s: %d row groups: parallel inspect\n%s\nsequential\n%s", layout, n, got, want)
		}
	}
}

// TestInspectStopsWhenCancelled: a done context stops inspect with its
// error, on each path (JSONL; Parquet by the column scan and by the row
// reader), rather than reading the file to its end.
func TestInspectStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	ds := make([]Dialogue, 2000)
	for i := range ds {
		ds[i] = variedDialogue(i)
	}
	jl := filepath.Join(dir, "d.jsonl")
	pq := filepath.Join(dir, "d.parquet")
	for _, path := range []string{jl, pq} {
		w, err := NewDialogueWriter(path, ExportOptions{To: ExportNative, Compression: "zstd"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range ds {
			if err := w.Write(&ds[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, path := range []string{jl, pq} {
		if rep, err := Inspect(ctx, path, 2); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled inspect returned %v (report %v), want context.Canceled", filepath.Base(path), err, rep != nil)
		}
	}
	f, rgs, err := openParquetRowGroups(pq)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := newReport(pq).inspectRowGroups(ctx, rgs, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("row reader: cancelled inspect returned %v, want context.Canceled", err)
	}
	if rep, err := Inspect(context.Background(), pq, 2); err != nil || rep.Records != len(ds) {
		t.Fatalf("not cancelled: %v, %v", rep, err)
	}
}
