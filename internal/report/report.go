// Package report renders a run directory as a self-contained HTML report
// (RUN/report.html: overview, per-stage statistics as inline SVG charts, a
// browsable sample of dialogues with highlighted code and execution records)
// and writes a Hugging Face dataset card (README.md) beside every published
// dialogue output. It reads only files: the manifest, the stage outputs, the
// dead letters and the audit reports, so a report can be rebuilt at any time
// from a run directory (`codefeedback report RUN_DIR`).
//
// Stage sections follow the statistics the stage packages write into the
// manifest; a section whose stage did not run says so.
package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// ReportFile is the report's name inside the run directory.
const ReportFile = "report.html"

// CardFile is the dataset card's name beside the exported data.
const CardFile = "README.md"

// Written lists what Build wrote and what it could not.
type Written struct {
	Report  string   // RUN/report.html
	Cards   []string // README.md files
	Skipped []string // outputs without a card, with the reason
	Data    *Data
}

// Build collects the run directory and writes RUN/report.html and a dataset
// card beside the published outputs of the dataset's stage (the source of
// the first dialogue output) that hold dialogues: one card per directory,
// one config per file (the trainer layout, id + messages, is the default). Relative output paths are resolved
// against the current directory, as the run wrote them; an output that is
// not there any more is listed in Skipped. Files are replaced atomically.
func Build(ctx context.Context, runDir string, o Options) (*Written, error) {
	d, err := Collect(ctx, runDir, o)
	if err != nil {
		return nil, err
	}
	w := &Written{Data: d, Report: filepath.Join(runDir, ReportFile)}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, d); err != nil {
		return nil, err
	}
	if err := schema.WriteFileAtomic(w.Report, buf.Bytes()); err != nil {
		return nil, err
	}
	byDir := map[string][]FileInfo{}
	var dirs []string
	for _, out := range d.Manifest.Outputs {
		if out.From != d.Dataset.From {
			w.Skipped = append(w.Skipped, fmt.Sprintf("%s: output of stage %s, not of the dataset's stage %s", out.Path, out.From, d.Dataset.From))
			continue
		}
		var fi FileInfo
		if strings.HasSuffix(out.Path, ".parquet") {
			st, err := os.Stat(out.Path)
			if err != nil {
				w.Skipped = append(w.Skipped, fmt.Sprintf("%s: %v", out.Path, err))
				continue
			}
			// The card declares the features of the file's own schema.
			fi = FileInfo{Path: out.Path, Name: filepath.Base(out.Path), Examples: out.Items, Bytes: st.Size(), Parquet: true}
			fi.Features, _ = parquetFeatures(out.Path)
		} else {
			var ok bool
			var err error
			fi, ok, err = InspectFile(out.Path)
			if err != nil {
				w.Skipped = append(w.Skipped, fmt.Sprintf("%s: %v", out.Path, err))
				continue
			}
			if !ok {
				w.Skipped = append(w.Skipped, out.Path+": not a JSONL file of dialogues with messages")
				continue
			}
		}
		fi.From = out.From
		dir := filepath.Dir(out.Path)
		if byDir[dir] == nil {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], fi)
	}
	for _, dir := range dirs {
		buf.Reset()
		if err := WriteCard(&buf, d, byDir[dir]); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, CardFile)
		if mine, err := ownCard(p); err != nil {
			return nil, err
		} else if !mine {
			w.Skipped = append(w.Skipped, p+": exists and was not written by codefeedback; left as it is")
			continue
		}
		if err := schema.WriteFileAtomic(p, buf.Bytes()); err != nil {
			return nil, err
		}
		w.Cards = append(w.Cards, p)
	}
	return w, nil
}

// ownCard reports whether path is free or holds a card this program wrote
// (recognised by its title and its "synthesized by codefeedback" line), so
// a README.md someone else wrote beside an output is never replaced.
func ownCard(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	return bytes.Contains(b, []byte("\n# codefeedback dialogues\n")) && bytes.Contains(b, []byte("synthesized by codefeedback ")), nil
}
