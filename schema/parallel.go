package schema

import (
	"encoding/json"
	"errors"
	"runtime"
	"sync"
)

// ParallelSource reads a Source's records in file order while decoding them
// on every core: one goroutine reads raw records in batches, workers decode
// the batches, and Next hands out the results in order, checking duplicate
// ids as it goes. Decoding is most of an import's or an export's time, so
// this is what lets them use more than one core. Memory: a few batches of
// raw records. Next is not safe for concurrent use; Close must be called.
type ParallelSource struct {
	s     *Source
	order chan *rawBatch
	stop  chan struct{}
	wg    sync.WaitGroup
	cur   *rawBatch
	pos   int
	fatal error
}

// rawBatch is a run of consecutive records: their bytes and lines, then,
// once done is closed, their decoded records or errors. end, when set,
// comes after the records (io.EOF or a fatal error).
type rawBatch struct {
	recs  []json.RawMessage
	lines []int
	errs  []error // a bad record from the reader, or from decoding
	out   []Record
	end   error
	done  chan struct{}
}

// batchBytes and batchRecords bound a batch.
const (
	batchBytes   = 1 << 20
	batchRecords = 512
)

// Parallel wraps s; workers <= 0 means GOMAXPROCS. CSV sources and a
// single worker decode in the calling goroutine's pace but still ahead of
// it.
func Parallel(s *Source, workers int) *ParallelSource {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &ParallelSource{s: s, order: make(chan *rawBatch, 2*workers+2), stop: make(chan struct{})}
	work := make(chan *rawBatch, 2*workers+2)
	p.wg.Add(1 + workers)
	go func() {
		defer p.wg.Done()
		defer close(p.order)
		defer close(work)
		for {
			b := p.read()
			select {
			case p.order <- b:
			case <-p.stop:
				return
			}
			select {
			case work <- b:
			case <-p.stop:
				return
			}
			if b.end != nil {
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer p.wg.Done()
			for b := range work {
				b.out = make([]Record, len(b.recs))
				for i, rec := range b.recs {
					if b.errs[i] == nil {
						b.out[i], b.errs[i] = s.decode(rec, nil, b.lines[i])
					}
				}
				close(b.done)
			}
		}()
	}
	return p
}

// read fills one batch from the source.
func (p *ParallelSource) read() *rawBatch {
	b := &rawBatch{done: make(chan struct{})}
	var arena []byte
	for len(b.recs) < batchRecords && len(arena) < batchBytes {
		rec, _, err := p.s.nextRaw()
		var re *RecordError
		switch {
		case errors.As(err, &re):
			b.recs = append(b.recs, nil)
			b.lines = append(b.lines, p.s.line)
			b.errs = append(b.errs, err)
			continue
		case err != nil:
			b.end = err
			return b
		}
		// Copies in one arena per batch: the reader's buffer is reused.
		if cap(arena)-len(arena) < len(rec) {
			arena = make([]byte, 0, max(batchBytes, len(rec)))
		}
		start := len(arena)
		arena = append(arena, rec...)
		b.recs = append(b.recs, arena[start:len(arena):len(arena)])
		b.lines = append(b.lines, p.s.line)
		b.errs = append(b.errs, nil)
	}
	return b
}

// Next returns the next record as Source.Next does.
func (p *ParallelSource) Next() (Record, error) {
	if p.fatal != nil {
		return Record{}, p.fatal
	}
	for p.cur == nil || p.pos == len(p.cur.recs) {
		if p.cur != nil && p.cur.end != nil {
			p.fatal = p.cur.end
			return Record{}, p.fatal
		}
		b, ok := <-p.order
		if !ok {
			// Closed by Close; nothing more to read.
			p.fatal = errors.New("schema: parallel source closed")
			return Record{}, p.fatal
		}
		<-b.done
		p.cur, p.pos = b, 0
	}
	i := p.pos
	p.pos++
	b := p.cur
	if b.errs[i] != nil {
		return Record{}, b.errs[i]
	}
	out := b.out[i]
	b.out[i] = Record{}                                  // the consumer owns it now
	return out, p.s.checkDup(out, b.recs[i], b.lines[i]) // batches are never reused
}

// Close stops the goroutines and closes the source.
func (p *ParallelSource) Close() error {
	close(p.stop)
	go func() {
		for range p.order {
		}
	}()
	p.wg.Wait()
	return p.s.Close()
}
