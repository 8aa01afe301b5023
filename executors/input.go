package executors

import (
	"fmt"
	"io"
	"os"
)

// DefaultMaxInput caps each user file read into memory for a request (a
// program, its stdin, files copied into its scratch).
const DefaultMaxInput = 64 << 20

// ReadInput reads all of r, named name in errors, failing once it passes
// max bytes (max <= 0 means DefaultMaxInput) without reading further: an
// endless source such as /dev/zero fails as fast as an oversized file.
func ReadInput(r io.Reader, name string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxInput
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, &InputTooLargeError{Name: name, Max: max}
	}
	return b, nil
}

// ReadInputFile is ReadInput on the file at path; a regular file's size is
// checked before anything is read.
func ReadInputFile(path string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxInput
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, &InputTooLargeError{Name: path, Max: max}
	}
	return ReadInput(f, path, max)
}

// InputTooLargeError says an input passed its cap.
type InputTooLargeError struct {
	Name string
	Max  int64
}

func (e *InputTooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the input cap of %d bytes", e.Name, e.Max)
}
