package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/internal/store"
)

// A per-item stage's output is its items' results, which are already in the
// store (each fsynced there before it counted), so the stage writes only
// their keys in input order (out.keys) and readers resolve them through the
// store: a second copy of every result as a file would double the run
// directory. Whole-set stages have no per-item results; they write their
// items (sets/KEY.jsonl.zst). Run directories of earlier versions hold
// stages/NAME/out.jsonl and sets/KEY.jsonl files; readOutput reads all of
// them.

// keysFile is a per-item stage's output in its stage directory.
const keysFile = "out.keys"

// keysMagic starts a keys file; 32-byte SHA-256 keys follow, binary (half
// the size of their hex form).
var keysMagic = []byte("codefeedback item keys v1\n")

// keysWriter writes a keys file atomically.
type keysWriter struct {
	a   *atomicFile
	buf [sha256.Size]byte
}

func newKeysWriter(path string) (*keysWriter, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	a.Write(keysMagic)
	return &keysWriter{a: a}, nil
}

// add appends one item key (hex SHA-256, as keyHasher makes them).
func (w *keysWriter) add(key string) error {
	if len(key) != 2*sha256.Size {
		return fmt.Errorf("pipeline: item key %q is not a SHA-256", key)
	}
	if _, err := hex.Decode(w.buf[:], []byte(key)); err != nil {
		return fmt.Errorf("pipeline: item key %q: %w", key, err)
	}
	_, err := w.a.Write(w.buf[:])
	return err
}

// readKeys yields the hex keys of a keys file in order.
func readKeys(path string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield("", fmt.Errorf("pipeline: %w", err))
			return
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 64<<10)
		head := make([]byte, len(keysMagic))
		if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, keysMagic) {
			yield("", fmt.Errorf("pipeline: %s is not a keys file", path))
			return
		}
		var k [sha256.Size]byte
		for {
			_, err := io.ReadFull(r, k[:])
			if err == io.EOF {
				return
			}
			if err != nil {
				yield("", fmt.Errorf("pipeline: %s: truncated: %w", path, err))
				return
			}
			if !yield(hex.EncodeToString(k[:]), nil) {
				return
			}
		}
	}
}

// lineSum hashes and counts a stage's output lines: the output's identity
// (OutHash) is that of its lines, however they are kept.
type lineSum struct {
	h     hash.Hash
	lines int64
}

func newLineSum() *lineSum { return &lineSum{h: sha256.New()} }

func (s *lineSum) add(p []byte) {
	s.h.Write(p)
	s.lines += int64(bytes.Count(p, []byte{'\n'}))
}

func (s *lineSum) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// isKeysOutput tells a per-item stage's keys file from an item file.
func isKeysOutput(path string) bool { return filepath.Base(path) == keysFile }

// outputLines yields the item lines of a stage output: a keys file resolved
// through db, or an item file (JSONL, zstd when .zst).
func outputLines(ctx context.Context, db *store.Bolt, path string) iter.Seq2[line, error] {
	if !isKeysOutput(path) {
		return readLines(path)
	}
	return func(yield func(line, error) bool) {
		if db == nil {
			yield(line{}, fmt.Errorf("pipeline: %s is a stage's item keys: read it with its run directory (pipeline.ReadOutput)", path))
			return
		}
		keys := make([]string, 0, batchLines)
		no := 0
		flush := func() bool {
			vals, err := db.GetMany(ctx, ItemsBucket, keys)
			if err != nil {
				yield(line{}, fmt.Errorf("pipeline: %s: %w", path, err))
				return false
			}
			for i, v := range vals {
				if len(v) == 0 {
					// GC keeps every key a keys file names; a missing one
					// means the store was replaced or edited.
					yield(line{}, fmt.Errorf("pipeline: %s: result %s is not in the store (run the stage again with --force)", path, keys[i]))
					return false
				}
				if v[0] == valFail {
					continue // a permanent failure: dead-lettered, no output
				}
				items, _ := splitDelta(v[1:])
				for l := range bytes.Lines(items) {
					no++
					if t := trimSpace(l); len(t) > 0 && !yield(line{no, t}, nil) {
						return false
					}
				}
			}
			keys = keys[:0]
			return ctx.Err() == nil
		}
		for k, err := range readKeys(path) {
			if err != nil {
				yield(line{}, err)
				return
			}
			if keys = append(keys, k); len(keys) == batchLines && !flush() {
				return
			}
		}
		if len(keys) > 0 {
			flush()
		}
		if err := ctx.Err(); err != nil {
			yield(line{}, err)
		}
	}
}

// ReadOutput yields the items of a stage's output in a run directory:
// output is the path the manifest records for the stage (StageRecord.Output),
// relative to runDir. A per-item stage's items are read from the run's store,
// opened read-only for the duration (so not while a run holds it).
func ReadOutput(ctx context.Context, runDir, output string) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		path := filepath.Join(runDir, output)
		var db *store.Bolt
		if isKeysOutput(path) {
			var err error
			if db, err = store.OpenBolt(filepath.Join(runDir, "store.db"), true); errors.Is(err, store.ErrBusy) {
				err = fmt.Errorf("%w (%w)", ErrLocked, err)
			}
			if err != nil {
				yield(Item{}, fmt.Errorf("pipeline: read %s: %w", output, err))
				return
			}
			defer db.Close()
		}
		for it, err := range readItems(ctx, db, path) {
			if !yield(it, err) || err != nil {
				return
			}
		}
	}
}

// StageOutput returns the output path (relative to runDir) of a stage that
// completed in runDir.
func StageOutput(runDir, stage string) (string, error) {
	r := &runner{dir: runDir, outDir: runDir}
	m, err := r.readMarker(stage)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("stage %s has not completed in %s", stage, runDir)
	}
	if err != nil {
		return "", err
	}
	return m.Output, nil
}

// setFile names a whole-set stage's output, compressed: sets are read once
// per run that uses them. legacySetFile is the uncompressed name of earlier
// versions, still read.
func setFile(setKey string) string { return filepath.Join("sets", setKey+".jsonl.zst") }

func legacySetFile(setKey string) string { return filepath.Join("sets", setKey+".jsonl") }

// setKeyOf returns the set key of a set file's path and whether it is one.
func setKeyOf(path string) (string, bool) {
	base := filepath.Base(path)
	for _, ext := range []string{".jsonl.zst", ".jsonl"} {
		if k, ok := strings.CutSuffix(base, ext); ok && !strings.Contains(k, ".") {
			return k, true
		}
	}
	return "", false
}
