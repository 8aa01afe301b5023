package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
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
	"github.com/klauspost/compress/zstd"
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

// keysMagic starts a keys file of earlier versions: 32-byte SHA-256 keys
// follow, binary (half the size of their hex form).
var keysMagic = []byte("codefeedback item keys v1\n")

// keysMagicV2 starts a keys file that may hold items itself: a zstd stream
// of records follows, each a key ('K' and 32 bytes: the result is in the
// store) or a passed-through item ('L', 32 bytes of key, a uvarint length
// and the item line). An item a stage passed on unchanged is kept here,
// in a compressed stream, and its store entry is one byte (valSame)
// saying so: a stage that passes its items through costs a fraction of
// its input instead of a second, per-value compressed copy in the store.
var keysMagicV2 = []byte("codefeedback item keys v2\n")

const (
	recKey  = 'K'
	recLine = 'L'
)

// keysWriter writes a keys file atomically.
type keysWriter struct {
	a   *atomicFile
	zw  *zstd.Encoder
	buf []byte
}

func newKeysWriter(path string) (*keysWriter, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	a.Write(keysMagicV2)
	zw, err := zstd.NewWriter(a, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		a.Abort()
		return nil, fmt.Errorf("pipeline: %s: %w", path, err)
	}
	a.flush = zw.Close // Commit ends the stream before the file
	return &keysWriter{a: a, zw: zw}, nil
}

// record appends one record: a key and, for a passed-through item, its line.
func (w *keysWriter) record(key string, line []byte, pass bool) error {
	if len(key) != 2*sha256.Size {
		return fmt.Errorf("pipeline: item key %q is not a SHA-256", key)
	}
	tag := byte(recKey)
	if pass {
		tag = recLine
	}
	var k [sha256.Size]byte
	if _, err := hex.Decode(k[:], []byte(key)); err != nil {
		return fmt.Errorf("pipeline: item key %q: %w", key, err)
	}
	w.buf = append(append(w.buf[:0], tag), k[:]...)
	if pass {
		w.buf = binary.AppendUvarint(w.buf, uint64(len(line)))
		w.buf = append(w.buf, line...)
	}
	_, err := w.zw.Write(w.buf)
	return err
}

// add appends one item key (hex SHA-256, as keyHasher makes them) whose
// result is in the store.
func (w *keysWriter) add(key string) error { return w.record(key, nil, false) }

// addLine appends the key of an item the stage passed through unchanged,
// with the item's line.
func (w *keysWriter) addLine(key string, line []byte) error { return w.record(key, line, true) }

// keyRecord is one entry of a keys file: line is nil when the result is
// in the store.
type keyRecord struct {
	key  string
	line []byte
}

// readKeyRecords yields the records of a keys file (either version) in
// order. A record's line is valid until the next record.
func readKeyRecords(path string) iter.Seq2[keyRecord, error] {
	return func(yield func(keyRecord, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(keyRecord{}, fmt.Errorf("pipeline: %w", err))
			return
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, 64<<10)
		head := make([]byte, len(keysMagic))
		if _, err := io.ReadFull(br, head); err != nil || (!bytes.Equal(head, keysMagic) && !bytes.Equal(head, keysMagicV2)) {
			yield(keyRecord{}, fmt.Errorf("pipeline: %s is not a keys file", path))
			return
		}
		var r *bufio.Reader
		v2 := bytes.Equal(head, keysMagicV2)
		if v2 {
			zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
			if err != nil {
				yield(keyRecord{}, fmt.Errorf("pipeline: %s: %w", path, err))
				return
			}
			defer zr.Close()
			r = bufio.NewReaderSize(zr, 64<<10)
		} else {
			r = br
		}
		var k [sha256.Size]byte
		var line []byte
		for {
			tag := byte(recKey)
			if v2 {
				if tag, err = r.ReadByte(); err == io.EOF {
					return
				} else if err != nil {
					yield(keyRecord{}, fmt.Errorf("pipeline: %s: %w", path, err))
					return
				}
			}
			_, err := io.ReadFull(r, k[:])
			if err == io.EOF && !v2 {
				return
			}
			if err != nil {
				yield(keyRecord{}, fmt.Errorf("pipeline: %s: truncated: %w", path, err))
				return
			}
			rec := keyRecord{key: hex.EncodeToString(k[:])}
			switch tag {
			case recKey:
			case recLine:
				n, err := binary.ReadUvarint(r)
				if err != nil || n > 1<<31 {
					yield(keyRecord{}, fmt.Errorf("pipeline: %s: truncated line record", path))
					return
				}
				if uint64(cap(line)) < n {
					line = make([]byte, n)
				}
				line = line[:n]
				if _, err := io.ReadFull(r, line); err != nil {
					yield(keyRecord{}, fmt.Errorf("pipeline: %s: truncated: %w", path, err))
					return
				}
				rec.line = line
			default:
				yield(keyRecord{}, fmt.Errorf("pipeline: %s: unknown record %q", path, tag))
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// readKeys yields the hex keys of a keys file in order.
func readKeys(path string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for rec, err := range readKeyRecords(path) {
			if !yield(rec.key, err) || err != nil {
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
		// A batch of records, in order: the store is asked for the keys'
		// results in one transaction; passed-through lines are copied into
		// one arena.
		type entry struct {
			key       int // index into keys; -1: a line record
			from, end int // the line in arena
		}
		var (
			keys    = make([]string, 0, batchLines)
			entries = make([]entry, 0, batchLines)
			arena   []byte
		)
		no := 0
		emit := func(l []byte) bool {
			no++
			if t := trimSpace(l); len(t) > 0 && !yield(line{no, t}, nil) {
				return false
			}
			return true
		}
		flush := func() bool {
			var vals [][]byte
			if len(keys) > 0 {
				var err error
				if vals, err = db.GetMany(ctx, ItemsBucket, keys); err != nil {
					yield(line{}, fmt.Errorf("pipeline: %s: %w", path, err))
					return false
				}
			}
			for _, en := range entries {
				if en.key < 0 {
					if !emit(arena[en.from:en.end:en.end]) {
						return false
					}
					continue
				}
				v := vals[en.key]
				if len(v) == 0 {
					// GC keeps every key a keys file names; a missing one
					// means the store was replaced or edited.
					yield(line{}, fmt.Errorf("pipeline: %s: result %s is not in the store (run the stage again with --force)", path, keys[en.key]))
					return false
				}
				switch v[0] {
				case valFail:
					continue // a permanent failure: dead-lettered, no output
				case valSame:
					yield(line{}, fmt.Errorf("pipeline: %s: result %s passes its input through, but the keys file does not hold it (run the stage again with --force)", path, keys[en.key]))
					return false
				}
				items, _ := splitDelta(v[1:])
				for l := range bytes.Lines(items) {
					if !emit(l) {
						return false
					}
				}
			}
			keys, entries, arena = keys[:0], entries[:0], nil
			return ctx.Err() == nil
		}
		for rec, err := range readKeyRecords(path) {
			if err != nil {
				yield(line{}, err)
				return
			}
			if rec.line != nil {
				if arena == nil {
					arena = make([]byte, 0, 64<<10)
				}
				from := len(arena)
				arena = append(arena, rec.line...)
				entries = append(entries, entry{key: -1, from: from, end: len(arena)})
			} else {
				entries = append(entries, entry{key: len(keys)})
				keys = append(keys, rec.key)
			}
			if len(entries) == batchLines && !flush() {
				return
			}
		}
		if len(entries) > 0 {
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
