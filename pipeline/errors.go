package pipeline

import (
	"context"
	"errors"
)

// transientError and permanentError classify a stage's item errors.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Transient marks err as worth retrying (rate limit, timeout, connection
// reset). Errors that implement `Temporary() bool` or `Transient() bool`
// returning true count as transient too.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// Permanent marks err as a deterministic failure of this item: the same input
// and settings would fail the same way, so the failure is cached.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsTransient reports whether err is marked transient.
func IsTransient(err error) bool {
	var t transientError
	if errors.As(err, &t) {
		return true
	}
	var tr interface{ Transient() bool }
	if errors.As(err, &tr) && tr.Transient() {
		return true
	}
	var tmp interface{ Temporary() bool }
	if errors.As(err, &tmp) && tmp.Temporary() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// IsPermanent reports whether err is marked permanent: by Permanent, or by
// a `Permanent() bool` method returning true on any error in its chain (a
// model answer that could not be parsed even after repairs).
func IsPermanent(err error) bool {
	var p permanentError
	if errors.As(err, &p) {
		return true
	}
	var pm interface{ Permanent() bool }
	return errors.As(err, &pm) && pm.Permanent()
}
