package schema

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// benchDialogue is a 6-turn dialogue of realistic size (~1.5 KB).
func benchDialogue(i int) Dialogue {
	code := strings.Repeat(fmt.Sprintf("    total += values[%d] * %d\n", i%97, i%13), 8)
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a careful Python programmer."},
		{Role: RoleUser, Content: fmt.Sprintf("Write a function that sums the weighted values of list %d and explain it.", i)},
		{Role: RoleAssistant, Content: "```python\ndef weighted(values):\n    total = 0\n" + code + "    return total\n```"},
		{Role: RoleExecution, Content: fmt.Sprintf("Traceback (most recent call last):\nIndexError: list index out of range (%d)\n", i)},
		{Role: RoleAssistant, Content: "The list is shorter than expected; guard the index.\n```python\ndef weighted(values):\n    return sum(v for v in values)\n```"},
		{Role: RoleUser, Content: "Thanks, that works."},
	}
	return Dialogue{ID: "bench-" + strconv.Itoa(i), Messages: msgs, Stage: "simulate", Method: "execution-feedback"}
}

const benchN = 100_000

// BenchmarkDialogueIO writes and reads benchN 6-turn dialogues as JSONL (this
// package's streaming writer/reader), Parquet, and a baseline of
// encoding/json line by line with bufio (no validation, no atomic rename).
// Reports MB/s (of JSONL-equivalent bytes) and records/s.
func BenchmarkDialogueIO(b *testing.B) {
	dir := b.TempDir()
	ds := make([]Dialogue, 1000) // cycled, so the generator is not measured
	for i := range ds {
		ds[i] = benchDialogue(i)
	}
	var jsonBytes int64
	for i := 0; i < benchN; i++ {
		bb, _ := json.Marshal(&ds[i%len(ds)])
		jsonBytes += int64(len(bb)) + 1
	}
	report := func(b *testing.B) {
		sec := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(jsonBytes)/1e6/sec, "MB/s")
		b.ReportMetric(float64(benchN)/sec, "records/s")
	}
	for _, kind := range []string{"baseline-encoding-json", "jsonl", "jsonl.zst", "parquet-snappy", "parquet-zstd"} {
		path := filepath.Join(dir, "d."+strings.NewReplacer("baseline-encoding-json", "base.jsonl", "parquet-snappy", "parquet", "parquet-zstd", "z.parquet").Replace(kind))
		var opts []Option
		if kind == "parquet-zstd" {
			opts = append(opts, ParquetCompression("zstd"))
		}
		b.Run(kind+"/write", func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if kind == "baseline-encoding-json" {
					f, _ := os.Create(path)
					w := bufio.NewWriter(f)
					enc := json.NewEncoder(w)
					for i := 0; i < benchN; i++ {
						enc.Encode(&ds[i%len(ds)])
					}
					w.Flush()
					f.Close()
					continue
				}
				w, err := CreateWriter[Dialogue](path, opts...)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < benchN; i++ {
					if err := w.Write(ds[i%len(ds)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
			if st, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(st.Size())/1e6, "file-MB")
			}
		})
		b.Run(kind+"/read", func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				count := 0
				if kind == "baseline-encoding-json" {
					f, _ := os.Open(path)
					br := bufio.NewReaderSize(f, 1<<16)
					for {
						line, err := br.ReadBytes('\n')
						if len(line) > 0 {
							var d Dialogue
							if err := json.Unmarshal(line, &d); err != nil {
								b.Fatal(err)
							}
							count++
						}
						if err != nil {
							break
						}
					}
					f.Close()
				} else {
					count = countDialogues(b, path)
				}
				if count != benchN {
					b.Fatalf("read %d records, want %d", count, benchN)
				}
			}
			report(b)
		})
	}
}

// TestPeakRSS re-executes the test binary as a child that writes then reads
// N dialogues through the streaming path and reports its peak RSS (VmHWM).
// It runs only with CODEFEEDBACK_RSS=1 (it writes ~1.5 GB at 1,000,000
// records); it fails when peak RSS at 1,000,000 records exceeds 1.5x that at
// 100,000.
func TestPeakRSS(t *testing.T) {
	if n := os.Getenv("CODEFEEDBACK_RSS_CHILD"); n != "" {
		rssChild(t, n)
		return
	}
	if os.Getenv("CODEFEEDBACK_RSS") != "1" {
		t.Skip("skipping: set CODEFEEDBACK_RSS=1 to measure peak RSS at 100,000 vs 1,000,000 records")
	}
	for _, format := range []string{"jsonl", "parquet"} {
		rss := map[int]int{}
		for _, n := range []int{100_000, 1_000_000} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSS$", "-test.v")
			cmd.Env = append(os.Environ(), "CODEFEEDBACK_RSS_CHILD="+strconv.Itoa(n)+":"+format+":"+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child %d %s: %v\n%s", n, format, err, out)
			}
			i := strings.Index(string(out), "PEAK_RSS_KB=")
			if i < 0 {
				t.Fatalf("child output has no PEAK_RSS_KB:\n%s", out)
			}
			var kb int
			fmt.Sscanf(string(out[i:]), "PEAK_RSS_KB=%d", &kb)
			rss[n] = kb
			t.Logf("%s: %d records: peak RSS %d MiB", format, n, rss[n]/1024)
		}
		if ratio := float64(rss[1_000_000]) / float64(rss[100_000]); ratio > 1.5 {
			t.Errorf("%s: peak RSS grew %.2fx from 100,000 to 1,000,000 records, want <= 1.5x", format, ratio)
		} else {
			t.Logf("%s: ratio %.2fx", format, ratio)
		}
	}
}

// dialogueSink is a writer of dialogues by value (the generic writer, the
// native Parquet writer).
type dialogueSink interface {
	Write(Dialogue) error
	Close() error
}

// writeMade writes the n dialogues gen(0..n-1) to w, one at a time (the
// peak-RSS tests must not hold them), and closes it.
func writeMade(t *testing.T, w dialogueSink, n int, gen func(int) Dialogue) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := w.Write(gen(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// countDialogues reads every dialogue of path through OpenReader, failing
// on any error, and returns how many there were.
func countDialogues(tb testing.TB, path string) int {
	tb.Helper()
	r, err := OpenReader[Dialogue](path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, err := range All(context.Background(), r) {
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
	return n
}

func rssChild(t *testing.T, spec string) {
	parts := strings.SplitN(spec, ":", 3)
	n, _ := strconv.Atoi(parts[0])
	path := filepath.Join(parts[2], "rss.jsonl.zst")
	if parts[1] == "parquet" {
		path = filepath.Join(parts[2], "rss.parquet")
	}
	w, err := CreateWriter[Dialogue](path)
	if err != nil {
		t.Fatal(err)
	}
	writeMade(t, w, n, benchDialogue)
	if got := countDialogues(t, path); got != n {
		t.Fatalf("read %d, want %d", got, n)
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Printf("PEAK_RSS_KB=%s\n", strings.Fields(l)[1])
		}
	}
}
