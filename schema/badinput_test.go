package schema

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func validParquet(t *testing.T, dir string, n int) []byte {
	t.Helper()
	p := filepath.Join(dir, "ok.parquet")
	var ds []Dialogue
	for i := 0; i < n; i++ {
		ds = append(ds, sampleDialogue(i))
	}
	if err := WriteAll(p, ds); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInput: each bad input gives an error naming the file, the line (or
// row) and the reason; record-level problems are RecordErrors that let
// reading go on, so `--on-error skip` can set them aside.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := `{"task_id": 1, "text": "add", "code": "def f(): pass", "test_list": ["assert f() is None"], "test_setup_code": "", "challenge_test_list": []}`
	big := `{"task_id": 3, "text": "big", "code": "x = '` + strings.Repeat("a", 50<<20) + `'", "test_list": [], "test_setup_code": "", "challenge_test_list": []}`
	cases := []struct {
		name, file string
		data       []byte
		format     Format
		opts       []Option
		wantRecErr bool   // a RecordError (skippable) rather than fatal
		want       string // substring of the error
		wantOK     int    // good records read in total
	}{
		{"malformed line", "a.jsonl", []byte(good + "\n{\"task_id\": 2, \"text\": \n" + strings.Replace(good, "1", "4", 1) + "\n"), FormatMBPP, nil, true, "line 2: malformed JSON", 2},
		{"invalid utf8", "b.jsonl", []byte(good + "\n{\"task_id\": 2, \"text\": \"\xff\xfe\", \"code\": \"x\"}\n"), FormatMBPP, nil, true, "line 2: invalid UTF-8", 1},
		{"missing field", "c.jsonl", []byte(good + "\n{\"task_id\": 2, \"code\": \"x\", \"test_list\": []}\n"), FormatMBPP, nil, true, "line 2: missing required field text", 1},
		{"duplicate id", "d.jsonl", []byte(good + "\n" + good + "\n"), FormatMBPP, nil, true, `line 2: duplicate id "Mbpp/1" (first seen at line 1)`, 1},
		{"50 MB record", "e.jsonl", []byte(good + "\n" + big + "\n"), FormatMBPP, nil, false, "", 2},
		{"record over limit", "f.jsonl", []byte(good + "\n" + big + "\n" + strings.Replace(good, "1", "5", 1) + "\n"), FormatMBPP, []Option{MaxRecordBytes(1 << 20)}, true, "line 2: record larger than the 1048576-byte limit", 2},
		{"empty file", "g.jsonl", nil, FormatMBPP, nil, false, "empty file (no records)", 0},
		{"blank lines only", "h.jsonl", []byte("\n\n  \n"), FormatMBPP, nil, false, "empty file (no records)", 0},
		{"truncated gzip", "i.jsonl.gz", gz(manyMBPP(200))[:300], FormatMBPP, nil, false, "unexpected EOF", -1},
		{"broken json array", "j.json", []byte(`[{"instruction": "a", "input": "", "output": "b"}, {"instruction": `), FormatAlpaca, nil, false, "element 2: malformed JSON array element", 1},
		{"csv wrong field count", "k.csv", []byte("id,text\nq1,hello\nq2,hi,extra\nq3,bye\n"), FormatCSV, nil, true, "line 3: wrong number of fields", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSource(path, ImportOptions{Format: c.format, Options: c.opts})
			var errs []error
			ok := 0
			if err != nil {
				errs = append(errs, err)
			} else {
				defer s.Close()
				// each goes on past a RecordError and stops after any other.
				for _, err := range each(context.Background(), s.Next) {
					if err != nil {
						errs = append(errs, err)
						continue
					}
					ok++
				}
			}
			if c.wantOK >= 0 && ok != c.wantOK {
				t.Errorf("got %d good records, want %d (errors %v)", ok, c.wantOK, errs)
			}
			if c.want == "" {
				if len(errs) > 0 {
					t.Fatalf("got errors %v, want none", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("got no error, want %q", c.want)
			}
			err = errs[0]
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got error %q, want it to name %s and contain %q", err, path, c.want)
			}
			var re *RecordError
			if got := errors.As(err, &re); got != c.wantRecErr {
				t.Errorf("got RecordError=%v, want %v (%v)", got, c.wantRecErr, err)
			}
		})
	}
}

// TestBadParquet: a truncated or non-dialogue Parquet file is a clear error.
func TestBadParquet(t *testing.T) {
	dir := t.TempDir()
	b := validParquet(t, dir, 50)
	trunc := filepath.Join(dir, "trunc.parquet")
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	empty := filepath.Join(dir, "empty.parquet")
	os.WriteFile(empty, nil, 0o644)
	for _, p := range []string{trunc, empty} {
		_, err := OpenReader[Dialogue](p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a readable Parquet file") {
			t.Errorf("%s: got %v, want a 'not a readable Parquet file' error naming the file", p, err)
		}
	}
}

// TestAtomicWrite: an aborted or failed write leaves an existing file under
// the final name untouched and no temporary files behind.
func TestAtomicWrite(t *testing.T) {
	for _, name := range []string{"out.jsonl", "out.jsonl.gz", "out.parquet"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := WriteAll(path, []Dialogue{sampleDialogue(1)}); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			w, err := CreateWriter[Dialogue](path)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i++ {
				w.Write(sampleDialogue(i))
			}
			w.Abort()
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Errorf("aborted write changed %s", name)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("got %d entries in dir after abort, want 1 (temp file left behind?)", len(ents))
			}
			got, err := ReadAll[Dialogue](path)
			if err != nil || len(got) != 1 {
				t.Errorf("reading the kept file: got %d records, err %v; want 1", len(got), err)
			}
		})
	}
}

func manyMBPP(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"task_id": %d, "text": "t%d", "code": "pass", "test_list": [], "test_setup_code": "", "challenge_test_list": []}`+"\n", i, i)
	}
	return b.Bytes()
}
