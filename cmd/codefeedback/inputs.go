package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// Bad input, one rule for every command: a file or directory named on the
// command line that is missing, of the wrong kind (a directory where a
// file is wanted, a file where a run directory is), empty, or whose
// content cannot be read (a truncated Parquet or .gz file, a malformed
// record) exits with exitBadData, and the message names the file (and the
// line, element or row of a bad record). Usage mistakes (flags, arguments,
// a pipeline file's content) stay exitUsage.

// checkInputFile fails with exitBadData unless path is a readable regular
// file with something in it ("-" is stdin and always passes).
func checkInputFile(cmd, path string) error {
	if path == "-" {
		return nil
	}
	st, err := statFile(cmd, path, "a file")
	if err != nil {
		return err
	}
	if st.Size() == 0 && st.Mode().IsRegular() {
		return withCode(exitBadData, fmt.Errorf("%s: %s: empty file", cmd, path))
	}
	return nil
}

// statFile is path's FileInfo, or an exitBadData error when path is
// missing, unreadable or a directory (want says what was wanted instead).
func statFile(cmd, path, want string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, badInput(cmd, path, err)
	case st.IsDir():
		return nil, withCode(exitBadData, fmt.Errorf("%s: %s: is a directory, want %s", cmd, path, want))
	}
	return st, nil
}

// checkRunDir fails with exitBadData unless dir is a run directory (it
// holds store.db): a typo must not create a directory, nor report an
// empty store as if it were one.
func checkRunDir(cmd, dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return badInput(cmd, dir, err)
	case !st.IsDir():
		return withCode(exitBadData, fmt.Errorf("%s: %s: not a directory, want a run directory", cmd, dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "store.db")); err != nil {
		return withCode(exitBadData, fmt.Errorf("%s: %s: not a run directory (no store.db; `codefeedback run` makes one)", cmd, dir))
	}
	return nil
}

// badInput wraps an error about the input path with exitBadData, keeping
// the innermost message that names the file (schema's readers put the file
// first: "in.jsonl: line 4: ...") and dropping the wrappers in between.
func badInput(cmd, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return withCode(exitBadData, fmt.Errorf("%s: %s: %w", cmd, path, pe.Err))
	}
	inner := err
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), path) {
			inner = e
		}
	}
	return withCode(exitBadData, fmt.Errorf("%s: %w", cmd, inner))
}

// isInputError reports whether err is about reading the input path: a bad
// record in it, a failed open or read of it, or a reader's message that
// names it first.
func isInputError(path string, err error) bool {
	var re *schema.RecordError
	if errors.As(err, &re) {
		return re.File == path || re.File == ""
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path == path
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), path+": ") {
			return true
		}
	}
	return strings.Contains(err.Error(), " "+path+": ") || strings.HasPrefix(err.Error(), path+": ")
}

// inputOr gives an error about the input path exitBadData (see badInput)
// and any other error code.
func inputOr(cmd, path string, err error, code int) error {
	if err == nil {
		return nil
	}
	if isInputError(path, err) {
		return badInput(cmd, path, err)
	}
	return withCode(code, fmt.Errorf("%s: %w", cmd, err))
}

// checkPipelineFile fails with exitBadData unless the pipeline file can be
// read (validate and run share it). An empty file is read: Load reports it
// as a mistake in the file, exitUsage, with the other mistakes.
func checkPipelineFile(cmd, path string) error {
	_, err := statFile(cmd, path, "a pipeline file")
	return err
}

// readCode is the exit code of a failed read or load of a file the command
// line names (a pipeline file, a flag's file): exitBadData when the file is
// missing or cannot be read, exitUsage for anything else (mistakes in a
// pipeline file, a value over a flag's cap, a malformed flag value).
func readCode(err error) int {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return exitBadData
	}
	return exitUsage
}
