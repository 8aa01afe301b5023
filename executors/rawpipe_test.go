package executors

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRawPipe: a write larger than the pipe's buffer waits in the poller
// and arrives whole and in order; the reader sees EOF once the writer is
// closed; a descriptor that is not non-blocking gets no raw pipe.
func TestRawPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rr, rw := newRawPipe(r), newRawPipe(w)
	if rr == nil || rw == nil {
		t.Fatal("newRawPipe of an os.Pipe: got nil, want a raw pipe (os.Pipe's ends are non-blocking)")
	}
	want := make([]byte, 1<<20) // 16 times a pipe's default buffer
	for i := range want {
		want[i] = byte(i * 7)
	}
	wrote := make(chan error, 1)
	go func() {
		n, err := rw.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write")
		}
		w.Close()
		wrote <- err
	}()
	got, err := io.ReadAll(rr)
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want the %d written, in order", len(got), len(want))
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newRawPipe(f) != nil {
		t.Error("newRawPipe of a regular (blocking) file: got a raw pipe, want nil")
	}
}

// The instances the tests build read and write through raw pipes, as a
// bwrap session's do.
func TestPipeInstanceIsRaw(t *testing.T) {
	in, _ := newPipeInstance(t)
	if _, ok := in.w.(*rawPipe); !ok {
		t.Errorf("requests go through %T, want *rawPipe", in.w)
	}
}
