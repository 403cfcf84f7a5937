package spmd

import (
	"runtime"
	"sync"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Spec is a partition spec (jax.sharding.PartitionSpec): per array
// dimension, none or several mesh axes. It is a plain value with no mesh
// attached; a sharding checks it against a mesh. Close it when done. A Spec
// from Sharding.Spec belongs to its sharding: read-only, and its Close
// does nothing.
type Spec struct {
	r     *ref
	owner any          // the Sharding a borrowed spec belongs to; nil when the caller owns it
	mu    sync.RWMutex // Append changes the spec: no other use at the same time
}

func newSpec(h uintptr) *Spec {
	s := &Spec{r: newRef(h, destroySpec)}
	runtime.SetFinalizer(s, (*Spec).Close)
	return s
}

func destroySpec(h uintptr) { capi.Spmd_spec_destroy(h) }

func (s *Spec) handle() uintptr {
	if s == nil || s.r == nil {
		return 0
	}
	return s.r.id
}

// ParseSpec parses a spec from text, in a short form ("data, None",
// "(x, y), None", "x", "") or as JAX writes it ("P('data', None)",
// "PartitionSpec(('x', 'y'),)"). ErrInvalidArgument for a syntax error
// (with the column in the message) or an axis used twice.
func ParseSpec(text string) (*Spec, error) {
	return made("ParseSpec", newSpec, func(h *uintptr) error { return capi.Spmd_spec_parse(text, h) })
}

// NewSpec creates a spec from its dimensions, each the axes splitting it (nil
// or empty: None, replicated): NewSpec([]string{"x"}, nil) is P('x', None).
// With no arguments it is P(). NewSpec(s.Dims()) copies s.
func NewSpec(dims ...[]string) (*Spec, error) {
	const fn = "NewSpec"
	s, err := made(fn, newSpec, capi.Spmd_spec_create)
	if err != nil {
		return nil, err
	}
	for _, axes := range dims {
		if err := check(fn, capi.Spmd_spec_append(s.handle(), axes)); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Append adds one dimension split over axes (none: None, replicated).
// ErrInvalidArgument, leaving the spec unchanged, for a malformed axis name
// or one the spec already uses, or for a spec that belongs to a sharding
// (copy it with NewSpec(spec.Dims()...)). Append may run at the same time
// as other uses of s (they wait for each other).
func (s *Spec) Append(axes ...string) error {
	const fn = "Spec.Append"
	if s == nil {
		return check(fn, capi.Spmd_spec_append(0, axes))
	}
	if s.owner != nil {
		return invalid(fn, "the spec of a sharding is read-only; copy it with NewSpec(spec.Dims()...)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return check(fn, capi.Spmd_spec_append(s.handle(), axes))
}

// Close releases the spec. Closing twice is harmless; later calls on s fail
// with ErrInvalidArgument. Closing a spec that belongs to a sharding does
// nothing.
func (s *Spec) Close() error {
	if s == nil || s.r == nil || s.owner != nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.free()
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
	n, err := get("Spec.NDim", func(n *int64) error { return capi.Spmd_spec_ndim(s.handle(), n) })
	return int(n), err
}

// Dim lists the mesh axes splitting dimension dim (empty for None);
// ErrOutOfRange past the last dimension.
func (s *Spec) Dim(dim int) ([]string, error) {
	defer s.rlock()()
	n, err := get("Spec.Dim", func(n *int64) error { return capi.Spmd_spec_dim_size(s.handle(), int64(dim), n) })
	if err != nil {
		return nil, err
	}
	axes := make([]string, n)
	for i := range axes {
		if err := check("Spec.Dim", capi.Spmd_spec_dim_axis(s.handle(), int64(dim), int64(i), &axes[i])); err != nil {
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
	eq, err := get("Spec.Equal", func(eq *int) error { return capi.Spmd_spec_equal(s.handle(), o.handle(), eq) })
	return boolOf(eq), err
}

// Text is JAX's str of the spec: "PartitionSpec('x', None)".
func (s *Spec) Text() (string, error) {
	defer s.rlock()()
	return get("Spec.Text", func(t *string) error { return capi.Spmd_spec_to_string(s.handle(), t) })
}

// String is Text, or the error in angle brackets.
func (s *Spec) String() string { return stringOr(s.Text()) }
