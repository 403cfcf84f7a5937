package spmd

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// CollectiveKind is a collective that can be planned.
type CollectiveKind int

// The collectives.
const (
	CollectivePsum        CollectiveKind = 1 // all-reduce (sum)
	CollectivePmean       CollectiveKind = 2 // all-reduce (mean)
	CollectivePmax        CollectiveKind = 3 // all-reduce (max)
	CollectivePmin        CollectiveKind = 4 // all-reduce (min)
	CollectiveAllGather   CollectiveKind = 5 // all-gather
	CollectivePsumScatter CollectiveKind = 6 // reduce-scatter
	CollectiveAllToAll    CollectiveKind = 7 // all-to-all
	CollectivePpermute    CollectiveKind = 8 // collective permute
)

// NoTimeout, as a Timeout option, waits for peers without end.
const NoTimeout time.Duration = 1<<63 - 1

// timeoutMs converts a Timeout option to libspmd's milliseconds: 0 stays 0
// (the default), NoTimeout is SPMD_TIMEOUT_FOREVER, a positive duration is
// rounded up to whole milliseconds, a negative one stays negative (refused).
func timeoutMs(d time.Duration) int64 {
	switch {
	case d == NoTimeout:
		return 1<<63 - 1
	case d > 0:
		return int64((d + time.Millisecond - 1) / time.Millisecond)
	case d < 0:
		return -1
	}
	return 0
}

// CollectiveOptions are the parameters of a collective; zero fields take
// the defaults.
type CollectiveOptions struct {
	// Axis is AllGather's axis, PsumScatter's scatter dimension and
	// AllToAll's split axis; negative counts from the end.
	Axis int
	// ConcatAxis is AllToAll's concatenation axis.
	ConcatAxis int
	// Tiled concatenates instead of stacking (AllGather, PsumScatter,
	// AllToAll).
	Tiled bool
	// Pairs are Ppermute's (source, dest) axis indices.
	Pairs [][2]int
	// Timeout of the rendezvous: 0 = $SPMD_COLLECTIVE_TIMEOUT_MS if set,
	// else 60 s; NoTimeout waits without end.
	Timeout time.Duration
}

// Collective is a planned collective: made once for a mesh, axes, dtype,
// global shape and input sharding, then executed many times (the jitted
// shard_map(lambda x: jax.lax.all_gather(x, ...)) of JAX). Its executions
// run one after another. Close it when done.
type Collective struct {
	r  *ref
	mu sync.Mutex // Close must not run during an execution
}

func (c *Collective) handle() uintptr {
	if c == nil || c.r == nil {
		return 0
	}
	return c.r.id
}

// NewCollective plans kind over the mesh axes axes ("x", "(x, y)", or "()"
// for none) of input's mesh, for arrays of dtype and global shape shape laid
// out by input. The result is laid out as shard_map would give it: the
// input's spec with axes dropped (replicated along them). ErrUnsupported for
// a non-tiled PsumScatter or AllToAll, whose result no spec can place.
func NewCollective(input *Sharding, kind CollectiveKind, axes string, dtype DType, shape []int, opts *CollectiveOptions) (*Collective, error) {
	const fn = "NewCollective"
	defer runtime.KeepAlive(input)
	var o capi.Spmd_collective_options
	if opts != nil {
		o = capi.NewSpmd_collective_options()
		defer capi.DeleteSpmd_collective_options(o)
		if err := check(fn, capi.Spmd_collective_options_init(o, capi.SizeofCollectiveOptions)); err != nil {
			return nil, err
		}
		o.SetAxis(int64(opts.Axis))
		o.SetConcat_axis(int64(opts.ConcatAxis))
		o.SetTiled(cBool(opts.Tiled))
		o.SetTimeout_ms(timeoutMs(opts.Timeout))
		if len(opts.Pairs) > 0 {
			// [][2]int64 is its pairs' values in a row: one copy into C
			// memory (libspmd copies it again).
			p64 := pairs64(opts.Pairs)
			pairs := capi.CopyInt64s(unsafe.Slice(&p64[0][0], 2*len(p64)))
			if pairs == 0 {
				return nil, &Error{Status: StatusOutOfMemory, Message: fn + ": opts.Pairs"}
			}
			defer capi.Free(pairs)
			o.SetNpairs(int64(len(opts.Pairs)))
			o.SetPairs(pairs)
		}
	}
	return made(fn, newCollective, func(h *uintptr) error {
		return capi.Spmd_collective_create(input.handle(), capi.Enum_SS_spmd_collective_kind(kind), axes, dtypeC(dtype), int64s(shape), o, h)
	})
}

func newCollective(h uintptr) *Collective {
	c := &Collective{r: newRef(h, func(h uintptr) { capi.Spmd_collective_destroy(h) })}
	runtime.SetFinalizer(c, (*Collective).Close)
	return c
}

// Close releases the collective, and the Sharding OutputSharding gave,
// after any execution in flight. Closing twice is harmless; later calls on
// c fail with ErrInvalidArgument.
func (c *Collective) Close() error {
	if c == nil || c.r == nil {
		return nil
	}
	runtime.SetFinalizer(c, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.free()
	return nil
}

// lock holds off Close during an execution; it returns the unlock.
func (c *Collective) lock() func() {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	return c.mu.Unlock
}

// OutputSharding is the output's sharding. It belongs to the collective,
// which makes it once and frees it when closed: there is nothing to Close,
// and the Sharding is usable while the collective is open.
func (c *Collective) OutputSharding() (*Sharding, error) {
	const fn = "Collective.OutputSharding"
	if c == nil || c.r == nil {
		return nil, check(fn, capi.Spmd_collective_output_sharding(0, new(uintptr)))
	}
	defer runtime.KeepAlive(c)
	r, err := c.r.child(fn, "output sharding", destroySharding, func(h *uintptr) error {
		return capi.Spmd_collective_output_sharding(c.r.id, h)
	})
	if err != nil {
		return nil, err
	}
	return &Sharding{r: r, owner: c}, nil
}

// OutputDType is the output's element type (Pmean of integers gives a float
// type, Psum of bool int32).
func (c *Collective) OutputDType() (DType, error) {
	defer runtime.KeepAlive(c)
	d, err := get("Collective.OutputDType", func(d *int) error { return capi.Spmd_collective_output_dtype(c.handle(), d) })
	return DType(d), err
}

// OutputNDim is the output's number of dimensions.
func (c *Collective) OutputNDim() (int, error) {
	defer runtime.KeepAlive(c)
	n, err := get("Collective.OutputNDim", func(n *int64) error { return capi.Spmd_collective_output_ndim(c.handle(), n) })
	return int(n), err
}

// OutputShape is the output's global shape.
func (c *Collective) OutputShape() ([]int, error) {
	defer runtime.KeepAlive(c)
	return filled("Collective.OutputShape", func(shape []int64, n *int64) error { return capi.Spmd_collective_output_shape(c.handle(), shape, n) })
}

// Execute runs the collective on input (of the planned dtype and shape;
// resharded first when laid out otherwise) into a new array.
func (c *Collective) Execute(input *Array) (*Array, error) {
	defer runtime.KeepAlive(c)
	defer runtime.KeepAlive(input)
	defer c.lock()()
	return made("Collective.Execute", newArray, func(h *uintptr) error { return capi.Spmd_collective_execute(c.handle(), input.handle(), h) })
}

// ExecuteInto runs the collective into output, an array of the output's
// sharding, dtype and shape (not input), reusing its buffers. No other
// goroutine may read or write output meanwhile.
func (c *Collective) ExecuteInto(input, output *Array) error {
	defer runtime.KeepAlive(c)
	defer runtime.KeepAlive(input)
	defer runtime.KeepAlive(output)
	defer c.lock()()
	return check("Collective.ExecuteInto", capi.Spmd_collective_execute_into(c.handle(), input.handle(), output.handle()))
}
