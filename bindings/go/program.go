package spmd

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Programs (experimental: spmd/experimental/program.h, which may change in
// any release): jax.jit for Go. Record calls a Go function once on abstract
// arrays, arrays with a shape, dtype and sharding but no values, as
// jax.jit's tracers; every op the function applies to them records itself
// into the program instead of running (Reshard records a layout
// constraint). The program is then compiled, chains of elementwise ops
// fused into one pass per shard, and Run runs it on arrays with values as
// often as needed.

// InputSpec describes one input of a program: the shape, dtype and layout
// every array bound to it by Run must have.
type InputSpec struct {
	Sharding *Sharding
	DType    DType
	Shape    []int
}

// RecordOptions are the options of RecordWith; zero fields take the
// defaults.
type RecordOptions struct {
	// OutShardings are the layouts the outputs are brought to (jax.jit's
	// out_shardings): nil, or one per array fn returns, where a nil entry
	// keeps the layout the program places that output in.
	OutShardings []*Sharding
	// Donate lists the inputs whose arrays every Run consumes (jax.jit's
	// donate_argnums): after Run those Arrays answer nothing but Close, and
	// the op reading one last may write its result into its memory.
	Donate []int
}

// Program is a recorded, compiled program (jax.jit(f) lowered and
// compiled). Runs may go on in several goroutines at once. Close it when
// done.
type Program struct {
	r  *ref
	mu sync.RWMutex // runs share it; Close waits for them
}

func newProgram(h uintptr) *Program {
	p := &Program{r: newRef(h, func(h uintptr) { capi.Spmd_x_program_destroy(h) })}
	runtime.SetFinalizer(p, (*Program).Close)
	return p
}

func (p *Program) handle() uintptr {
	if p == nil || p.r == nil {
		return 0
	}
	return p.r.id
}

// recording is the set of values of a program being recorded: the inputs
// Record made and every array an op made from them (derived), all closed
// when Record returns.
type recording struct {
	mu     sync.Mutex
	values []*Array
}

func (r *recording) add(a *Array) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a.rec = r
	r.values = append(r.values, a)
}

func (r *recording) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.values {
		a.Close()
	}
	r.values = nil
}

// derived returns a, the result of an op on operands, after adding it to
// the recording of the first operand that is a value of a program being
// recorded, if any.
func derived(a *Array, err error, operands ...*Array) (*Array, error) {
	if err != nil {
		return nil, err
	}
	for _, x := range operands {
		if x != nil && x.rec != nil {
			x.rec.add(a)
			break
		}
	}
	return a, nil
}

// Record records fn as a program over inputs and compiles it (jax.jit(fn)
// traced with abstract arguments of these shapes, dtypes and shardings).
// fn receives one abstract Array per input, applies ops to them (Sin,
// BinaryScalar, Matmul, Sum, Array.Reshard, ...) and returns the program's
// outputs. Each op is checked and placed as it would be eagerly, so a
// mistake fails the op that makes it, and fn returns that error. Arrays
// with values that fn uses are kept as constants of the program.
//
// The arrays fn receives, and every array an op makes from them, are the
// program's values: they answer Shape, DType and Sharding but have no
// values (ToHost and ShardMap refuse them), and they are valid during fn
// only: Record closes them when it returns. fn must not call ops of
// another goroutine's recording, and ops on the values after Record fails
// with ErrInvalidArgument.
//
// A panic in fn propagates to Record's caller, after Record has released
// what it made. ErrInvalidArgument for a bad input (the message names
// inputs[k]), an output that is not a value of this program (outputs[k]),
// or no output at all.
func Record(rt *Runtime, inputs []InputSpec, fn func(in []*Array) ([]*Array, error)) (*Program, error) {
	return record("Record", rt, inputs, nil, fn)
}

// RecordWith is Record with options (nil for every default).
func RecordWith(rt *Runtime, inputs []InputSpec, opts *RecordOptions, fn func(in []*Array) ([]*Array, error)) (*Program, error) {
	return record("RecordWith", rt, inputs, opts, fn)
}

func record(name string, rt *Runtime, inputs []InputSpec, opts *RecordOptions, fn func(in []*Array) ([]*Array, error)) (prog *Program, err error) {
	defer runtime.KeepAlive(rt)
	if fn == nil {
		return nil, invalid(name, "fn: nil function")
	}
	if opts == nil {
		opts = &RecordOptions{}
	}
	p, err := made(name, newProgram, func(h *uintptr) error { return capi.Spmd_x_program_create(rt.handle(), h) })
	if err != nil {
		return nil, err
	}
	rec := &recording{}
	// Whatever happens (an error, a panic in fn), the values go, and so
	// does the program unless it is returned.
	defer func() {
		rec.close()
		if prog == nil {
			p.Close()
		}
	}()

	in := make([]*Array, len(inputs))
	for k, spec := range inputs {
		a, err := made(fmt.Sprintf("%s: inputs[%d]", name, k), newArray, func(h *uintptr) error {
			return capi.Spmd_x_program_input(p.handle(), spec.Sharding.handle(), dtypeC(spec.DType), int64s(spec.Shape), h)
		})
		runtime.KeepAlive(spec.Sharding)
		if err != nil {
			return nil, err
		}
		rec.add(a)
		in[k] = a
	}

	outs, err := fn(in)
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, invalid(name, "fn returned no arrays: a program needs at least one output")
	}
	if opts.OutShardings != nil && len(opts.OutShardings) != len(outs) {
		return nil, invalid(name, "OutShardings: %d shardings for %d outputs", len(opts.OutShardings), len(outs))
	}
	for k, out := range outs {
		var s *Sharding
		if opts.OutShardings != nil {
			s = opts.OutShardings[k]
		}
		err := check(fmt.Sprintf("%s: outputs[%d]", name, k), capi.Spmd_x_program_output(p.handle(), out.handle(), s.handle()))
		runtime.KeepAlive(out)
		runtime.KeepAlive(s)
		if err != nil {
			return nil, err
		}
	}
	for _, k := range opts.Donate {
		if k < 0 {
			return nil, invalid(name, "Donate: input %d is negative", k)
		}
		if err := check(fmt.Sprintf("%s: Donate", name), capi.Spmd_x_program_donate(p.handle(), int64(k))); err != nil {
			return nil, err
		}
	}
	if err := check(name, capi.Spmd_x_program_compile(p.handle())); err != nil {
		return nil, err
	}
	return p, nil
}

// Close releases the program. Closing twice is harmless; it waits for
// runs in progress, and later calls on p fail with ErrInvalidArgument.
// Arrays Run returned are the caller's, unaffected.
func (p *Program) Close() error {
	if p == nil || p.r == nil {
		return nil
	}
	runtime.SetFinalizer(p, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r.free()
	return nil
}

// InputCount is the number of inputs, len of what Run takes.
func (p *Program) InputCount() (int, error) {
	defer runtime.KeepAlive(p)
	n, err := get("Program.InputCount", func(n *int64) error { return capi.Spmd_x_program_input_count(p.handle(), n) })
	return int(n), err
}

// OutputCount is the number of outputs, len of what Run returns.
func (p *Program) OutputCount() (int, error) {
	defer runtime.KeepAlive(p)
	n, err := get("Program.OutputCount", func(n *int64) error { return capi.Spmd_x_program_output_count(p.handle(), n) })
	return int(n), err
}

// Run runs the program on inputs, one array with values per InputSpec, of
// its shape and dtype and laid out by its sharding (they are left as they
// are), and returns the outputs, new arrays the caller closes; each is
// what the recorded ops give eagerly, in values and in layout. As with the
// ops, the work may still be running when Run returns: BlockUntilReady or
// a copy to the host waits for it. ErrInvalidArgument for a wrong number
// of inputs or an input of another shape, dtype, layout or runtime (the
// message names inputs[k]); an op's own error as the eager op gives it.
func (p *Program) Run(inputs ...*Array) ([]*Array, error) {
	const fn = "Program.Run"
	defer runtime.KeepAlive(inputs)
	if p == nil {
		return nil, check(fn, capi.Spmd_x_program_run(0, 0, nil, 0, nil))
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, err := get(fn, func(n *int64) error { return capi.Spmd_x_program_output_count(p.handle(), n) })
	if err != nil {
		return nil, err
	}
	outs := make([]uintptr, n)
	hs := handles(inputs)
	if err := check(fn, capi.Spmd_x_program_run(p.handle(), int64(len(hs)), hs, n, outs)); err != nil {
		return nil, err
	}
	arrays := make([]*Array, n)
	for k, h := range outs {
		arrays[k] = newArray(h)
	}
	return arrays, nil
}

// Text is the program for people (jax.jit(f).lower(...).as_text() and
// .cost_analysis(), written to be read): each value's dtype, shape and
// partition spec, each op with the data it moves between devices and its
// flops, the fused passes and the totals.
func (p *Program) Text() (string, error) {
	defer runtime.KeepAlive(p)
	return get("Program.Text", func(s *string) error { return capi.Spmd_x_program_text(p.handle(), s) })
}

// String is Text, or the error in angle brackets.
func (p *Program) String() string { return stringOr(p.Text()) }
