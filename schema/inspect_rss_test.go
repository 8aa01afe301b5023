package schema

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestInspectPeakRSS writes a large Parquet file (CODEFEEDBACK_INSPECT_ROWS
// varied 2 KB dialogues; 2,500,000 make about 1 GB with zstd) and has a
// child process inspect it, reporting the child's peak RSS (VmHWM), which
// must stay under 512 MiB. Heavy: it runs only when the variable is set.
func TestInspectPeakRSS(t *testing.T) {
	if p := os.Getenv("CODEFEEDBACK_INSPECT_CHILD"); p != "" {
		rep, err := Inspect(context.Background(), p, 5)
		if err != nil {
			t.Fatal(err)
		}
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Printf("RECORDS=%d PEAK_RSS_KB=%s\n", rep.Records, strings.Fields(l)[1])
			}
		}
		return
	}
	n, _ := strconv.Atoi(os.Getenv("CODEFEEDBACK_INSPECT_ROWS"))
	if n <= 0 {
		t.Skip("skipping: set CODEFEEDBACK_INSPECT_ROWS=2500000 to inspect about 1 GB of Parquet and measure peak RSS")
	}
	path := filepath.Join(t.TempDir(), "big.parquet")
	w, err := createParquetDialogues(path, ParquetCompression("zstd"))
	if err != nil {
		t.Fatal(err)
	}
	writeMade(t, w, n, variedDialogue)
	st, _ := os.Stat(path)
	cmd := exec.Command(os.Args[0], "-test.run=^TestInspectPeakRSS$")
	cmd.Env = append(os.Environ(), "CODEFEEDBACK_INSPECT_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var records, kb int
	i := strings.Index(string(out), "RECORDS=")
	if i < 0 {
		t.Fatalf("child output:\n%s", out)
	}
	fmt.Sscanf(string(out[i:]), "RECORDS=%d PEAK_RSS_KB=%d", &records, &kb)
	t.Logf("inspect of %d dialogues, %.0f MB of Parquet: peak RSS %d MiB", records, float64(st.Size())/1e6, kb/1024)
	if records != n {
		t.Errorf("inspect read %d records, want %d", records, n)
	}
	if kb > 512<<10 {
		t.Errorf("peak RSS %d MiB, want under 512 MiB", kb/1024)
	}
}
