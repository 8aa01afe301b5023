package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/codefeedback/codefeedback/schema"
)

// marker is a stage's completion record, written after its output.
type marker struct {
	Key       string             `json:"key"`
	InputHash string             `json:"input_hash"`
	OutHash   string             `json:"out_hash"`
	Output    string             `json:"output"` // relative to the run dir
	Counts    Counts             `json:"counts"`
	Stats     map[string]float64 `json:"stats,omitempty"`
	// Tripped: a gate tripped the stage; its output is partial and the next
	// run runs it again (from the cache, but for the skipped items).
	Tripped bool `json:"tripped,omitempty"`
	// Inputs, on the inputs' marker only: what was imported, for the
	// manifest of a run that reuses the import.
	Inputs []InputRecord `json:"inputs,omitempty"`
}

func (r *runner) stageDir(name string) string { return filepath.Join(r.outDir, "stages", name) }

func (r *runner) readMarker(name string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, "stages", name, "done.json"))
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stage %s: bad completion marker: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, m.Output)); err != nil {
		return nil, fmt.Errorf("stage %s: output missing: %w", name, err)
	}
	return &m, nil
}

func (r *runner) writeMarker(name string, m *marker) error {
	b, _ := json.Marshal(m)
	return schema.WriteFileAtomic(filepath.Join(r.stageDir(name), "done.json"), b)
}

// sources returns the output files a stage reads and their combined hash.
func (r *runner) sources(s *StageSpec) ([]string, string, int64, error) {
	h := sha256.New()
	var paths []string
	var n int64
	for _, src := range s.Input {
		m := r.done[src]
		if m == nil {
			return nil, "", 0, fmt.Errorf("input %s has no output", src)
		}
		paths = append(paths, filepath.Join(r.outDir, m.Output))
		if r.o.DryRun && !fileExists(filepath.Join(r.outDir, m.Output)) {
			paths[len(paths)-1] = filepath.Join(r.dir, m.Output)
		}
		h.Write([]byte(m.OutHash))
		n += m.Counts.Out
	}
	return paths, hex.EncodeToString(h.Sum(nil)), n, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (r *runner) isForced(name string) bool { return slices.Contains(r.o.Force, name) }

func (r *runner) writeRefs(name, content string) error {
	return schema.WriteFileAtomic(filepath.Join(r.stageDir(name), "refs"), []byte(content))
}

// StageOutHash is the hash of the output lines of a stage that completed in
// runDir (its completion marker's), or "" when it has not: readers that
// summarise an output can keep their summary under it.
func StageOutHash(runDir, stage string) string {
	r := &runner{dir: runDir, outDir: runDir}
	m, err := r.readMarker(stage)
	if err != nil {
		return ""
	}
	return m.OutHash
}
