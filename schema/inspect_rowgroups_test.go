package schema

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

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
		f, rgs, err := openParquetRowGroups(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range rgs {
			rg.Close()
		}
		f.Close()
		if layout == ExportNative && len(rgs) < 4 {
			t.Fatalf("%s: %d row groups, want several", layout, len(rgs))
		}
		got, err := Inspect(context.Background(), path, 7)
		if err != nil {
			t.Fatal(err)
		}
		want := newReport(path)
		want.Kind, want.Format, want.Schema = got.Kind, got.Format, got.Schema
		r, err := openParquetDialogues(path)
		if err != nil {
			t.Fatal(err)
		}
		for {
			d, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want.addDialogue(&d, 7)
		}
		r.Close()
		var g, w2 strings.Builder
		got.Render(&g)
		want.Render(&w2)
		if g.String() != w2.String() {
			t.Errorf("%s: %d row groups: parallel inspect\n%s\nsequential\n%s", layout, len(rgs), g.String(), w2.String())
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
