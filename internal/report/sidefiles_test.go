package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
)

// TestReadSideFiles: the dead letters and the quarantine are read from
// where the manifest names them, else from the run directory (a moved
// run); lines that do not decode are skipped and at most maxDeadShown
// records are kept.
func TestReadSideFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var many []string
	for i := range maxDeadShown + 5 {
		many = append(many, fmt.Sprintf(`{"stage":"filter","item_id":"q%d","error":"boom","attempts":2}`, i))
	}
	deadAt := write("elsewhere-dead.jsonl", append([]string{"not json"}, many...)...)
	write("quarantine.jsonl", `{"stage":"explain","item_id":"d1","gate":"preface","reason":"code"}`, `{`)

	d := &Data{RunDir: dir, Manifest: &pipeline.Manifest{DeadFile: deadAt, DeadCount: 60,
		QuarantineFile: filepath.Join(dir, "gone", "quarantine.jsonl"), QuarantineCount: 1}}
	if err := d.readDead(); err != nil {
		t.Fatal(err)
	}
	if len(d.Dead) != maxDeadShown || d.Dead[0].ItemID != "q0" || d.Dead[0].Attempts != 2 || d.DeadTotal != 60 {
		t.Errorf("dead letters: got %d (first %+v, total %d), want %d from q0 of 60", len(d.Dead), d.Dead[0], d.DeadTotal, maxDeadShown)
	}
	if err := d.readQuarantine(); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "quarantine.jsonl")
	if len(d.Quarantine) != 1 || d.Quarantine[0].Gate != "preface" || d.QuarantineFile != want {
		t.Errorf("quarantine: got %+v from %q, want the one rejection from %q", d.Quarantine, d.QuarantineFile, want)
	}

	empty := &Data{RunDir: t.TempDir(), Manifest: &pipeline.Manifest{}}
	if err := empty.readQuarantine(); err != nil || empty.Quarantine != nil || empty.QuarantineFile != "" {
		t.Errorf("no quarantine file: got %+v, %q, %v; want nothing and no error", empty.Quarantine, empty.QuarantineFile, err)
	}
}
