package spmd

import (
	"runtime"
	"sync"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Spec is a partition spec (jax.sharding.PartitionSpec): per array
// dimension, none or several mesh axes. It is a plain value with no mesh
// attached; a sharding checks it against a mesh. Close it when done.
type Spec struct {
	h  uintptr
	mu sync.RWMutex // Append changes the spec: no other use at the same time
}

func newSpec(h uintptr) *Spec {
	s := &Spec{h: h}
	runtime.SetFinalizer(s, (*Spec).Close)
	return s
}

func (s *Spec) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// ParseSpec parses a spec from text, in a short form ("data, None",
// "(x, y), None", "x", "") or as JAX writes it ("P('data', None)",
// "PartitionSpec(('x', 'y'),)"). ErrInvalidArgument for a syntax error
// (with the column in the message) or an axis used twice.
func ParseSpec(text string) (*Spec, error) {
	return made(newSpec, func(h *uintptr) error { return capi.Spmd_spec_parse(text, h) })
}

// NewSpec creates a spec from its dimensions, each the axes splitting it (nil
// or empty: None, replicated): NewSpec([]string{"x"}, nil) is P('x', None).
// With no arguments it is P().
func NewSpec(dims ...[]string) (*Spec, error) {
	s, err := made(newSpec, capi.Spmd_spec_create)
	if err != nil {
		return nil, err
	}
	for _, axes := range dims {
		if err := s.Append(axes...); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Append adds one dimension split over axes (none: None, replicated).
// ErrInvalidArgument, leaving the spec unchanged, for a malformed axis name
// or one the spec already uses. Append may run at the same time as other
// uses of s (they wait for each other).
func (s *Spec) Append(axes ...string) error {
	if s == nil {
		return check(capi.Spmd_spec_append(0, axes))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return check(capi.Spmd_spec_append(s.h, axes))
}

// Close releases the spec. Closing twice is harmless; later calls on s fail
// with ErrInvalidArgument.
func (s *Spec) Close() error {
	if s == nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	capi.Spmd_spec_destroy(s.h)
	return nil
}

// rlock holds off Append while s is read; it returns the unlock.
func (s *Spec) rlock() func() {
	if s == nil {
		return func() {}
	}
	s.mu.RLock()
	return s.mu.RUnlock
}

// NDim is the number of dimensions the spec names (trailing omitted ones not
// counted; trailing Nones written out are).
func (s *Spec) NDim() (int, error) {
	defer s.rlock()()
	n, err := get(func(n *int64) error { return capi.Spmd_spec_ndim(s.handle(), n) })
	return int(n), err
}

// Dim lists the mesh axes splitting dimension dim (empty for None);
// ErrOutOfRange past the last dimension.
func (s *Spec) Dim(dim int) ([]string, error) {
	defer s.rlock()()
	n, err := get(func(n *int64) error { return capi.Spmd_spec_dim_size(s.handle(), int64(dim), n) })
	if err != nil {
		return nil, err
	}
	axes := make([]string, n)
	for i := range axes {
		if err := check(capi.Spmd_spec_dim_axis(s.handle(), int64(dim), int64(i), &axes[i])); err != nil {
			return nil, err
		}
	}
	return axes, nil
}

// Dims lists every dimension's axes, as Dim does.
func (s *Spec) Dims() ([][]string, error) { return list(s.NDim, s.Dim) }

// Equal reports whether two specs are equal once trailing Nones are
// dropped (P('x') equals P('x', None)).
func (s *Spec) Equal(o *Spec) (bool, error) {
	defer s.rlock()()
	if o != s {
		defer o.rlock()()
	}
	eq, err := get(func(eq *int) error { return capi.Spmd_spec_equal(s.handle(), o.handle(), eq) })
	return boolOf(eq), err
}

// Text is JAX's str of the spec: "PartitionSpec('x', None)".
func (s *Spec) Text() (string, error) {
	defer s.rlock()()
	return get(func(t *string) error { return capi.Spmd_spec_to_string(s.handle(), t) })
}

// String is Text, or the error in angle brackets.
func (s *Spec) String() string { return stringOr(s.Text()) }
