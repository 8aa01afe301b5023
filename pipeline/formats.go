package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/codefeedback/codefeedback/internal/registry"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/klauspost/compress/zstd"
)

// InputFormat reads one input file as items, streaming. Errors carry the file
// and line.
type InputFormat func(ctx context.Context, path string) iter.Seq2[Item, error]

// ItemWriter writes one published output file. Close publishes it atomically
// (nothing appears under the final name before Close succeeds); Abort drops it.
type ItemWriter interface {
	Write(Item) error
	Close() error
	Abort()
}

// OutputFormat creates an ItemWriter for path.
type OutputFormat func(path string) (ItemWriter, error)

var (
	inputs  = registry.Named[InputFormat]{Kind: "pipeline: input format"}
	outputs = registry.Named[OutputFormat]{Kind: "pipeline: output format"}
)

// RegisterInput adds an input format (adapter) for pipeline files' `inputs:`.
// The schema package's adapters are registered under their names by the
// command wiring; the built-ins read JSONL.
func RegisterInput(name string, f InputFormat) { inputs.Add(name, f) }

// RegisterOutput adds an output format for pipeline files' `outputs:`.
func RegisterOutput(name string, f OutputFormat) { outputs.Add(name, f) }

func lookupFormat(name string) (InputFormat, bool) { return inputs.Get(name) }

func lookupOutput(name string) (OutputFormat, bool) { return outputs.Get(name) }

// InputFormats lists registered input formats.
func InputFormats() []string { return inputs.Names() }

// OutputFormats lists registered output formats.
func OutputFormats() []string { return outputs.Names() }

// guessFormat: every input file is read through the schema package's
// adapters, which detect the format from the first record ("auto").
func guessFormat(path string) string {
	if strings.HasSuffix(path, ".items.jsonl") {
		return "items"
	}
	return string(schema.FormatAuto)
}

func init() {
	// "items" is the engine's own envelope format (stage outputs); every
	// other input format is a schema adapter.
	RegisterInput("items", func(ctx context.Context, path string) iter.Seq2[Item, error] { return readItems(ctx, nil, path) })
	for _, f := range schema.Formats {
		RegisterInput(string(f), schemaInput(f))
	}
	RegisterOutput("items", func(path string) (ItemWriter, error) { return newJSONLOut(path, true) })
	RegisterOutput("jsonl", func(path string) (ItemWriter, error) { return newJSONLOut(path, false) })
	// Trainer-ready dialogue formats, written by the same code as `export`.
	for name, o := range schema.OutputLayouts() {
		RegisterOutput(name, func(path string) (ItemWriter, error) {
			w, err := schema.NewDialogueWriter(path, o)
			if err != nil {
				return nil, err
			}
			return dialogueOut{w}, nil
		})
	}
}

// dialogueOut publishes dialogue items in an export format; items of other
// kinds are an error (name `kind: dialogue` on the output).
type dialogueOut struct{ w *schema.DialogueWriter }

func (d dialogueOut) Write(it Item) error {
	dl, err := As[schema.Dialogue](it, KindDialogue)
	if err != nil {
		return fmt.Errorf("pipeline: output: %w", err)
	}
	return d.w.Write(&dl)
}

func (d dialogueOut) Close() error { return d.w.Close() }
func (d dialogueOut) Abort()       { d.w.Abort() }

// readItems reads a stage output's Item envelopes: a JSONL file, or a keys
// file resolved through db (outputLines).
func readItems(ctx context.Context, db *store.Bolt, path string) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		for line, err := range outputLines(ctx, db, path) {
			if err != nil {
				yield(Item{}, err)
				return
			}
			it, err := parseItem(bytes.Clone(line.data))
			if err != nil {
				yield(Item{}, fmt.Errorf("%s:%d: %w", path, line.no, err))
				return
			}
			if it.ID == "" || it.Kind == "" {
				yield(Item{}, fmt.Errorf("%s:%d: item without id or kind", path, line.no))
				return
			}
			if !yield(it, nil) {
				return
			}
		}
	}
}

// schemaInput reads a file through a schema adapter. A problem with neither a
// solution nor tests is a plain query (Code Alpaca style) and becomes a query
// item; dialogues (Code-Feedback files) become dialogue items.
func schemaInput(f schema.Format) InputFormat {
	return func(ctx context.Context, path string) iter.Seq2[Item, error] {
		return func(yield func(Item, error) bool) {
			src, err := schema.OpenSource(path, schema.ImportOptions{Format: f,
				// The duplicate-id check keeps a hash per record; the engine
				// keys results by content, so it streams in constant memory.
				AllowDuplicates: true})
			if err != nil {
				yield(Item{}, err)
				return
			}
			defer src.Close()
			for {
				if err := ctx.Err(); err != nil {
					yield(Item{}, err)
					return
				}
				rec, err := src.Next()
				if err == io.EOF {
					return
				}
				if err != nil {
					yield(Item{}, err)
					return
				}
				var it Item
				switch {
				case rec.Dialogue != nil:
					it, err = DialogueItem(*rec.Dialogue)
				case rec.Problem.Solution == "" && len(rec.Problem.Tests) == 0:
					it, err = QueryItem(rec.Problem.Query)
				default:
					it, err = ProblemItem(*rec.Problem)
				}
				if !yield(it, err) || err != nil {
					return
				}
			}
		}
	}
}

type line struct {
	no   int
	data []byte // valid until the next iteration
}

// readLines yields the non-blank lines of a file, zstd-compressed when its
// name ends in .zst. Lines may be of any length.
func readLines(path string) iter.Seq2[line, error] {
	return func(yield func(line, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(line{}, fmt.Errorf("pipeline: %w", err))
			return
		}
		defer f.Close()
		var src io.Reader = f
		if strings.HasSuffix(path, ".zst") {
			zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
			if err != nil {
				yield(line{}, fmt.Errorf("pipeline: %s: %w", path, err))
				return
			}
			defer zr.Close()
			src = zr
		}
		r := bufio.NewReaderSize(src, 1<<20)
		var buf []byte
		for no := 1; ; no++ {
			b, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				buf = append(buf[:0], b...)
				for err == bufio.ErrBufferFull {
					b, err = r.ReadSlice('\n')
					buf = append(buf, b...)
				}
				b = buf
			}
			if err != nil && err != io.EOF {
				yield(line{}, fmt.Errorf("%s:%d: %w", path, no, err))
				return
			}
			t := trimSpace(b)
			if len(t) > 0 && !yield(line{no, t}, nil) {
				return
			}
			if err == io.EOF {
				return
			}
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// atomicFile buffers writes to a schema.AtomicFile: written under a temporary
// name, fsynced and renamed over path on Commit, so a reader or a crash never
// sees a partial file.
type atomicFile struct {
	af    *schema.AtomicFile
	w     *bufio.Writer
	flush func() error // run first by Commit (a compressor's Close)
}

func createAtomic(path string) (*atomicFile, error) {
	af, err := schema.CreateAtomic(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return &atomicFile{af: af, w: bufio.NewWriterSize(af, 1<<20)}, nil
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.w.Write(p) }

func (a *atomicFile) Commit() error {
	if a.flush != nil {
		if err := a.flush(); err != nil {
			a.af.Abort()
			return fmt.Errorf("pipeline: write %s: %w", a.af.Name(), err)
		}
	}
	if err := a.w.Flush(); err != nil {
		a.af.Abort()
		return fmt.Errorf("pipeline: write %s: %w", a.af.Name(), err)
	}
	if err := a.af.Commit(); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}

func (a *atomicFile) Abort() { a.af.Abort() }

// jsonlOut writes items (envelopes) or their bare records as JSONL.
type jsonlOut struct {
	a        *atomicFile
	envelope bool
}

func newJSONLOut(path string, envelope bool) (*jsonlOut, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	return &jsonlOut{a: a, envelope: envelope}, nil
}

func (j *jsonlOut) Write(it Item) error {
	var b []byte
	var err error
	if j.envelope {
		b, err = appendItem(nil, it)
	} else {
		b, err = compactJSON(it.Data)
	}
	if err != nil {
		return fmt.Errorf("pipeline: encode item %s: %w", it.ID, err)
	}
	b = append(b, '\n')
	_, err = j.a.Write(b)
	return err
}

func (j *jsonlOut) Close() error { return j.a.Commit() }
func (j *jsonlOut) Abort()       { j.a.Abort() }

func compactJSON(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
