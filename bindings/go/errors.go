package spmd

import (
	"errors"
	"fmt"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Status is a libspmd status code (spmd_status). Values are stable across
// releases.
type Status int

// The status codes.
const (
	StatusOK              Status = 0 // success
	StatusInvalidArgument Status = 1 // a bad value, a nil or a closed object
	StatusOutOfRange      Status = 2 // an index past the end (shard, device)
	StatusOutOfMemory     Status = 3 // an allocation failed
	StatusUnsupported     Status = 4 // valid, but not built in or not available
	StatusTimeout         Status = 5 // a peer never reached a collective
	StatusCallback        Status = 6 // a user callback reported failure
	StatusInternal        Status = 7 // a bug in libspmd
)

// String is libspmd's static name of the status ("invalid argument"),
// "unknown status" for a value that is none.
func (s Status) String() string { return capi.Spmd_status_string(int(s)) }

// Error is a failed libspmd call: its status and the message libspmd gave
// for it, which names the function, the argument and the problem.
type Error struct {
	Status  Status
	Message string
}

// Error formats the error as "spmd: <status>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "spmd: " + e.Status.String()
	}
	return "spmd: " + e.Status.String() + ": " + e.Message
}

// Is reports whether target is a sentinel (an *Error without a message) of
// the same status, so errors.Is(err, ErrInvalidArgument) holds for every
// invalid-argument failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// The sentinel errors, one per failure status, for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrOutOfRange      = &Error{Status: StatusOutOfRange}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrTimeout         = &Error{Status: StatusTimeout}
	ErrCallback        = &Error{Status: StatusCallback}
	ErrInternal        = &Error{Status: StatusInternal}
)

// check turns an error of the raw layer into an *Error.
func check(err error) error {
	var ce *capi.Error
	if errors.As(err, &ce) {
		return &Error{Status: Status(ce.Status), Message: ce.Message}
	}
	return err
}

// invalid is an argument error found by the binding before calling libspmd.
func invalid(format string, args ...any) error {
	return &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// get runs call, which writes one value through its pointer (libspmd's out
// argument), and returns the value, or the call's error.
func get[T any](call func(out *T) error) (T, error) {
	var v T
	if err := check(call(&v)); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// made runs call, which creates a libspmd object and writes its handle,
// and returns the handle wrapped by wrap (the type's constructor, which
// sets the finalizer), or the call's error.
func made[T any](wrap func(uintptr) *T, call func(out *uintptr) error) (*T, error) {
	h, err := get(call)
	if err != nil {
		return nil, err
	}
	return wrap(h), nil
}

// filled runs call on a buffer of MaxNDim values, of which C fills the
// first n (a shape or coordinates), and returns those n.
func filled(call func(buf []int64, n *int64) error) ([]int64, error) {
	buf := make([]int64, MaxNDim)
	n, err := get(func(n *int64) error { return call(buf, n) })
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// list reads count() values one by one with at.
func list[T any](count func() (int, error), at func(int) (T, error)) ([]T, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = at(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// handles lists the handles of objects (0 for a nil one), for the C
// arrays of handles (inputs, specs, operands).
func handles[T interface{ handle() uintptr }](objects []T) []uintptr {
	hs := make([]uintptr, len(objects))
	for i, o := range objects {
		hs[i] = o.handle()
	}
	return hs
}

// boolOf converts libspmd's 0/1 flags.
func boolOf(v int) bool { return v != 0 }

func intOf(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stringOr is what String methods print when the call fails.
func stringOr(s string, err error) string {
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s
}
