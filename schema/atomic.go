package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AtomicFile is a file written under a temporary name in the destination's
// directory and renamed into place only by Commit, so a crash or an Abort
// never leaves a partial file under the final name.
type AtomicFile struct {
	*os.File
	final string
	done  bool
}

// CreateAtomic creates path's directory if needed and a temporary file in it.
func CreateAtomic(path string) (*AtomicFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &AtomicFile{File: f, final: path}, nil
}

// Commit fsyncs the data, renames the temporary file to the final name and
// fsyncs the directory so the rename itself is durable.
func (a *AtomicFile) Commit() error {
	if a.done {
		return errors.New("atomic file already closed")
	}
	a.done = true
	tmp := a.File.Name()
	if err := a.File.Sync(); err != nil {
		a.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("sync %s: %w", a.final, err)
	}
	if err := a.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", a.final, err)
	}
	// CreateTemp makes 0600 files; outputs are ordinary data files.
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("chmod %s: %w", a.final, err)
	}
	if err := os.Rename(tmp, a.final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename into %s: %w", a.final, err)
	}
	return syncDir(filepath.Dir(a.final))
}

// Abort closes and removes the temporary file; the final name is untouched.
// It is a no-op after Commit.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.File.Close()
	os.Remove(a.File.Name())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// WriteFileAtomic writes b to path as an AtomicFile, in one write: b is
// already in memory, so it needs no buffer (manifests and markers are small
// and written several times per run).
func WriteFileAtomic(path string, b []byte) error {
	a, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	if _, err := a.Write(b); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return a.Commit()
}

// WriteJSONAtomic writes v to path as indented JSON and a newline, as an
// AtomicFile: for the manifests, indexes and reports people read.
func WriteJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}
