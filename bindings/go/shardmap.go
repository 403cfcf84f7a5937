package spmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// ShardMapOptions are the options of ShardMap; zero fields take the
// defaults.
type ShardMapOptions struct {
	// CheckRep verifies that outputs are equal along every mesh axis their
	// out spec leaves out (JAX's check_rep), failing with the devices and
	// the first index that differs.
	CheckRep bool
	// Timeout is how long a collective waits for its peers before every
	// waiting device fails with ErrTimeout: 0 = $SPMD_COLLECTIVE_TIMEOUT_MS
	// if set, else 60 s; NoTimeout waits without end.
	Timeout time.Duration
	// Print receives ShardContext.Print's text with the device that printed,
	// one call at a time, on a device thread. nil writes each text as a
	// line to os.Stdout, as jax.debug.print does.
	Print func(device int, text string)
}

// shardCall is what a ShardMap's callbacks share, reached from C through a
// cgo.Handle.
type shardCall struct {
	mesh *Mesh
	fn   func(*ShardContext) error
}

// ShardMap is shard_map(fn, mesh, in_specs, out_specs)(*inputs) with the
// specs as text (see ParseSpec): each input is resharded to
// NamedSharding(mesh, inSpecs[i]) if laid out otherwise, then fn runs on
// every device of the mesh at once, each call on its own libspmd device
// thread, and must set each of the len(outSpecs) outputs with
// ShardContext.SetOutput. Outputs are assembled by outSpecs: a dimension
// split over axes A concatenates the blocks along A; a mesh axis the spec
// leaves out means the blocks along it are equal.
//
// fn's ShardContext and Blocks are valid only during that call. An error fn
// returns (with the status of the *Error it is or wraps, else
// StatusCallback) or a panic in fn fails that device; ShardMap then returns
// libspmd's error, which names the device and carries the message.
// ShardMaps of one runtime run one after another; fn must not call
// ShardMap.
func ShardMap(mesh *Mesh, fn func(*ShardContext) error, inputs []*Array, inSpecs, outSpecs []string, opts *ShardMapOptions) ([]*Array, error) {
	if len(inSpecs) != len(inputs) {
		return nil, invalid("ShardMap", "inSpecs: %d in specs for %d inputs", len(inSpecs), len(inputs))
	}
	return shardMap("ShardMap", mesh, fn, inputs, len(outSpecs), opts,
		func(fnp, user uintptr, ins []uintptr, o capi.Spmd_shard_map_options, outs []uintptr) error {
			return capi.Spmd_shard_map_text(mesh.handle(), fnp, user, int64(len(ins)), ins, inSpecs,
				int64(len(outs)), outSpecs, o, outs)
		})
}

// ShardMapSpecs is ShardMap with the specs as Spec values.
func ShardMapSpecs(mesh *Mesh, fn func(*ShardContext) error, inputs []*Array, inSpecs, outSpecs []*Spec, opts *ShardMapOptions) ([]*Array, error) {
	if len(inSpecs) != len(inputs) {
		return nil, invalid("ShardMapSpecs", "inSpecs: %d in specs for %d inputs", len(inSpecs), len(inputs))
	}
	return shardMap("ShardMapSpecs", mesh, fn, inputs, len(outSpecs), opts,
		func(fnp, user uintptr, ins []uintptr, o capi.Spmd_shard_map_options, outs []uintptr) error {
			// Hold off Append on every spec (each once) during the call.
			held := map[*Spec]bool{}
			for _, s := range append(append([]*Spec(nil), inSpecs...), outSpecs...) {
				if !held[s] {
					held[s] = true
					defer s.rlock()()
				}
			}
			return capi.Spmd_shard_map(mesh.handle(), fnp, user, int64(len(ins)), ins, handles(inSpecs),
				int64(len(outs)), handles(outSpecs), o, outs)
		})
}

func printLine(_ int, text string) { os.Stdout.WriteString(text + "\n") }

func shardMap(name string, mesh *Mesh, fn func(*ShardContext) error, inputs []*Array, nOut int, opts *ShardMapOptions,
	run func(fnp, user uintptr, ins []uintptr, o capi.Spmd_shard_map_options, outs []uintptr) error) ([]*Array, error) {
	defer runtime.KeepAlive(mesh)
	defer runtime.KeepAlive(inputs)
	if fn == nil {
		return nil, invalid(name, "fn: nil function")
	}
	// The library would call fn at every run of the program being recorded,
	// after this call has returned and fn's handle is gone.
	for k, a := range inputs {
		if a != nil && a.rec != nil {
			return nil, invalid(name, "inputs[%d]: a value of a program being recorded; a shard_map records into a program from C only (its function would run at every run of the program)", k)
		}
	}
	if opts == nil {
		opts = &ShardMapOptions{}
	}
	o := capi.NewSpmd_shard_map_options()
	defer capi.DeleteSpmd_shard_map_options(o)
	if err := check(name, capi.Spmd_shard_map_options_init(o, capi.SizeofShardMapOptions)); err != nil {
		return nil, err
	}
	o.SetCheck_rep(cBool(opts.CheckRep))
	o.SetTimeout_ms(timeoutMs(opts.Timeout))
	sink := opts.Print
	if sink == nil {
		sink = printLine
	}
	printHandle := cgo.NewHandle(sink)
	defer printHandle.Delete()
	o.SetPrint_fn(printFnPtr())
	o.SetPrint_user_data(uintptr(printHandle))

	call := cgo.NewHandle(&shardCall{mesh: mesh, fn: fn})
	defer call.Delete()
	outs := make([]uintptr, nOut)
	if err := check(name, run(shardFnPtr(), uintptr(call), handles(inputs), o, outs)); err != nil {
		return nil, err
	}
	arrays := make([]*Array, nOut)
	for i, h := range outs {
		arrays[i] = newArray(h)
	}
	return arrays, nil
}

// ShardContext is one device's view inside a ShardMap callback (spmd_ctx).
// It is valid only during the callback that received it, on that
// callback's goroutine; its methods fail with ErrInvalidArgument after.
//
// Axes arguments name one mesh axis or a tuple of them as Python spells it:
// "x", "x,y", "(x, y)", "('x', 'y')", or "()" for the device alone.
type ShardContext struct {
	h        uintptr
	call     *shardCall
	blocks   []capi.Spmd_block // descriptors to free when the callback returns
	done     atomic.Bool
	recorded atomic.Bool // Error was called: the failure is recorded
}

// finish ends the context: its blocks' descriptors are freed.
func (c *ShardContext) finish() {
	c.done.Store(true)
	for _, b := range c.blocks {
		capi.DeleteSpmd_block(b)
	}
	c.blocks = nil
}

// fail records why the device fails (spmd_ctx_error) and returns status.
func (c *ShardContext) fail(status Status, message string) Status {
	_ = capi.Spmd_ctx_error(c.h, int(status), message)
	return status
}

func (c *ShardContext) alive(what string) error {
	if c.done.Load() {
		return invalid("ShardContext."+what, "the callback has returned")
	}
	return nil
}

// DeviceID is the global id of the device this callback runs on.
func (c *ShardContext) DeviceID() (int, error) {
	return get("ShardContext.DeviceID", func(d *int) error { return capi.Spmd_ctx_device_id(c.h, d) })
}

// Mesh is the mesh the ShardMap runs over: the *Mesh given to ShardMap.
func (c *ShardContext) Mesh() (*Mesh, error) {
	// libspmd gives back the handle ShardMap passed; asking it checks the
	// context is still usable here.
	if _, err := get("ShardContext.Mesh", func(h *uintptr) error { return capi.Spmd_ctx_mesh(c.h, h) }); err != nil {
		return nil, err
	}
	return c.call.mesh, nil
}

// Stream is the queue this device's work goes to, for the callback's own
// kernels: on the CUDA platform the device's cudaStream_t (convert it with
// C.cudaStream_t(stream) in cgo code), nil on platforms whose work is not
// queued (cpu, sim). Kernels queued on it run after the inputs are ready
// and before any use of the blocks they write (collectives, outputs): the
// way to compute on MemoryDevice blocks, whose Pointer is a device address.
func (c *ShardContext) Stream() (unsafe.Pointer, error) {
	return get("ShardContext.Stream", func(s *unsafe.Pointer) error { return capi.Spmd_ctx_stream(c.h, s) })
}

// AxisIndex is jax.lax.axis_index(axes): this device's row-major index over
// the coordinates of axes.
func (c *ShardContext) AxisIndex(axes string) (int, error) {
	n, err := get("ShardContext.AxisIndex", func(n *int64) error { return capi.Spmd_ctx_axis_index(c.h, axes, n) })
	return int(n), err
}

// AxisSize is jax.lax.axis_size(axes): the product of the sizes of axes.
func (c *ShardContext) AxisSize(axes string) (int, error) {
	n, err := get("ShardContext.AxisSize", func(n *int64) error { return capi.Spmd_ctx_axis_size(c.h, axes, n) })
	return int(n), err
}

// newBlock runs fill, a call of method what that fills a block descriptor,
// on a new descriptor the context frees when the callback returns, and
// returns the block it describes, named origin in errors.
func (c *ShardContext) newBlock(what, origin string, fill func(d capi.Spmd_block) error) (*Block, error) {
	if err := c.alive(what); err != nil {
		return nil, err
	}
	d := capi.NewSpmd_block()
	c.blocks = append(c.blocks, d)
	if err := check("ShardContext."+what, capi.Spmd_block_init(d, capi.SizeofBlock)); err != nil {
		return nil, err
	}
	if err := check("ShardContext."+what, fill(d)); err != nil {
		return nil, err
	}
	return c.blockOf(d, origin), nil
}

// blockOf is the Block a filled descriptor describes.
func (c *ShardContext) blockOf(d capi.Spmd_block, origin string) *Block {
	return &Block{
		ctx:    c,
		desc:   d,
		dtype:  DType(d.GetDtype()),
		shape:  mustInts(copyInt64s(d.GetShape(), int(d.GetNdim()))),
		data:   d.GetData(),
		kind:   MemoryKind(d.GetMemory_kind()),
		origin: origin,
	}
}

// InputCount is the number of inputs of the ShardMap.
func (c *ShardContext) InputCount() (int, error) {
	n, err := get("ShardContext.InputCount", func(n *int64) error { return capi.Spmd_ctx_input_count(c.h, n) })
	return int(n), err
}

// Input is this device's block of input index (read-only data);
// ErrOutOfRange past the last input.
func (c *ShardContext) Input(index int) (*Block, error) {
	return c.newBlock("Input", fmt.Sprintf("the block of input %d", index), func(d capi.Spmd_block) error {
		return capi.Spmd_ctx_input(c.h, int64(index), d)
	})
}

// Inputs are this device's blocks of every input.
func (c *ShardContext) Inputs() ([]*Block, error) { return list(c.InputCount, c.Input) }

// Alloc is a new zero-filled block on this device, owned by the context
// (freed when the ShardMap returns, or passed on by SetOutput).
func (c *ShardContext) Alloc(dtype DType, shape ...int) (*Block, error) {
	return c.newBlock("Alloc", "the block from Alloc", func(d capi.Spmd_block) error {
		return capi.Spmd_ctx_alloc(c.h, dtypeC(dtype), int64s(shape), d)
	})
}

// Array is the block as an Array on this device alone, so that the ops
// (Unary, Matmul, Sum, ...) apply to it and run this device's own kernels;
// Block turns a result back into a block. An input's block is shared with
// the array, any other block copied. The caller Closes the array.
func (c *ShardContext) Array(b *Block) (*Array, error) {
	d, err := b.descriptor(c, "Array")
	if err != nil {
		return nil, err
	}
	return made("ShardContext.Array", newArray, func(h *uintptr) error {
		return capi.Spmd_ctx_array(c.h, d, h)
	})
}

// Block is an array on this device alone (from Array and ops on such
// arrays) as a block of the context, ready to read: for SetOutput or a
// collective. It may share the array's memory: do not write it.
func (c *ShardContext) Block(a *Array) (*Block, error) {
	defer runtime.KeepAlive(a)
	return c.newBlock("Block", "the block of an array", func(d capi.Spmd_block) error {
		return capi.Spmd_ctx_block(c.h, a.handle(), d)
	})
}

// SetOutput sets this device's block of output index: a block from Alloc or a
// collective is taken over without a copy, an input's is copied. Setting
// an output twice replaces it.
func (c *ShardContext) SetOutput(index int, b *Block) error {
	d, err := b.descriptor(c, "SetOutput")
	if err != nil {
		return err
	}
	return check("ShardContext.SetOutput", capi.Spmd_ctx_set_output(c.h, int64(index), d))
}

// Print is jax.debug.print: hands text to the ShardMap's print sink with
// this device's id.
func (c *ShardContext) Print(text string) error {
	return check("ShardContext.Print", capi.Spmd_ctx_print(c.h, text))
}

// Printf formats with fmt.Sprintf, then Prints.
func (c *ShardContext) Printf(format string, args ...any) error {
	return c.Print(fmt.Sprintf(format, args...))
}

// Error records why this device fails (spmd_ctx_error) and returns the
// error for the callback to return: `return ctx.Error(spmd.StatusCallback,
// "why")`. The message reaches the caller of ShardMap, tagged with the
// device. Returning any other error from the callback records it the same
// way.
func (c *ShardContext) Error(status Status, message string) error {
	if status == StatusOK {
		return nil
	}
	c.fail(status, message)
	c.recorded.Store(true)
	return &Error{Status: status, Message: message}
}

// collective runs one collective into a new block.
func (c *ShardContext) collective(name string, x *Block, call func(in, out capi.Spmd_block) error) (*Block, error) {
	in, err := x.descriptor(c, name)
	if err != nil {
		return nil, err
	}
	return c.newBlock(name, "the result of "+name, func(out capi.Spmd_block) error { return call(in, out) })
}

// The collectives. Every device of each group over axes must call the same
// collective with the same dtype and compatible shapes, in the same order;
// each call blocks until its group has arrived. The result is a new block
// owned by the context. A peer that never arrives fails the waiting devices
// with ErrTimeout (or its own error); a failed collective fails the
// ShardMap even if the callback ignores it.

// Psum is jax.lax.psum: the sum of x over each group of axes (bool sums to
// int32).
func (c *ShardContext) Psum(x *Block, axes string) (*Block, error) {
	return c.collective("Psum", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_psum(c.h, in, axes, out)
	})
}

// Pmean is jax.lax.pmean: Psum times 1/axis_size (integers give float32,
// int64 float64).
func (c *ShardContext) Pmean(x *Block, axes string) (*Block, error) {
	return c.collective("Pmean", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_pmean(c.h, in, axes, out)
	})
}

// Pmax is jax.lax.pmax: the elementwise maximum over each group (bool: any).
func (c *ShardContext) Pmax(x *Block, axes string) (*Block, error) {
	return c.collective("Pmax", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_pmax(c.h, in, axes, out)
	})
}

// Pmin is jax.lax.pmin: the elementwise minimum over each group (bool: all).
func (c *ShardContext) Pmin(x *Block, axes string) (*Block, error) {
	return c.collective("Pmin", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_pmin(c.h, in, axes, out)
	})
}

// AllGather is jax.lax.all_gather(x, axes, axis=axis, tiled=tiled): not
// tiled, a new dimension of size axis_size at axis; tiled, the blocks
// concatenated along axis.
func (c *ShardContext) AllGather(x *Block, axes string, axis int, tiled bool) (*Block, error) {
	return c.collective("AllGather", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_all_gather(c.h, in, axes, int64(axis), cBool(tiled), out)
	})
}

// PsumScatter is jax.lax.psum_scatter(x, axes, scatter_dimension=dim,
// tiled=tiled): device i gets the i-th chunk of the sum along dim.
func (c *ShardContext) PsumScatter(x *Block, axes string, dim int, tiled bool) (*Block, error) {
	return c.collective("PsumScatter", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_psum_scatter(c.h, in, axes, int64(dim), cBool(tiled), out)
	})
}

// AllToAll is jax.lax.all_to_all(x, axes, splitAxis, concatAxis,
// tiled=tiled): chunk j of splitAxis goes to peer j; the received chunks
// are joined along concatAxis in peer order.
func (c *ShardContext) AllToAll(x *Block, axes string, splitAxis, concatAxis int, tiled bool) (*Block, error) {
	return c.collective("AllToAll", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_all_to_all(c.h, in, axes, int64(splitAxis), int64(concatAxis), cBool(tiled), out)
	})
}

// Ppermute is jax.lax.ppermute(x, axes, perm): each (source, dest) pair of
// axis indices sends source's block to dest; devices no pair sends to
// receive zeros.
func (c *ShardContext) Ppermute(x *Block, axes string, pairs [][2]int) (*Block, error) {
	return c.collective("Ppermute", x, func(in, out capi.Spmd_block) error {
		return capi.Spmd_ctx_ppermute(c.h, in, axes, pairs64(pairs), out)
	})
}

// Block is a dense row-major local block on one device: an input, an
// Alloc'd block or a collective's result. Its data is memory the
// ShardContext owns, valid only during the callback that made it: never
// keep a Block, or a slice BlockData gave, past the callback's return.
// MemoryKind says whether host code may touch it.
type Block struct {
	ctx    *ShardContext
	desc   capi.Spmd_block
	dtype  DType
	shape  []int
	data   unsafe.Pointer
	kind   MemoryKind
	origin string // names the block in errors: "the block of input 0"
}

// DType is the block's element type.
func (b *Block) DType() DType { return b.dtype }

// MemoryKind is where the block's data lies: MemoryHost (cpu) and
// MemoryHostMapped (sim; cuda with mapped callback memory) are host memory
// BlockData reads; MemoryDevice (cuda) is device memory only kernels on
// ShardContext.Stream may touch.
func (b *Block) MemoryKind() MemoryKind { return b.kind }

// Pointer is the address of the block's data, of its MemoryKind (a device
// pointer for kernels queued on ShardContext.Stream when MemoryDevice),
// valid only until the callback returns; it may be nil for an empty block.
// Writing through it follows BlockData's rules.
func (b *Block) Pointer() unsafe.Pointer { return b.data }

// Shape is the block's local shape (a copy).
func (b *Block) Shape() []int { return append([]int(nil), b.shape...) }

// Size is the number of elements, prod(Shape()).
func (b *Block) Size() int { return elements(b.shape) }

// descriptor is the block's spmd_block for a call on context c.
func (b *Block) descriptor(c *ShardContext, what string) (capi.Spmd_block, error) {
	if b == nil {
		return nil, invalid("ShardContext."+what, "nil block")
	}
	if b.ctx != c {
		return nil, invalid("ShardContext."+what, "a block of another callback")
	}
	if err := c.alive(what); err != nil {
		return nil, err
	}
	return b.desc, nil
}

// BlockData is the block's elements as a slice over the context's memory,
// without a copy: writable for Alloc'd and collective blocks, not to be
// written for inputs. It is valid only until the callback returns. T must
// be the block's element type (uint16 for U16, F16 and BF16), and the block host
// memory (MemoryKind().HostAddressable()): a MemoryDevice block is device
// memory the host must not touch. BlockData panics otherwise or after the
// callback has returned (inside a callback, ShardMap turns the panic into
// the device's error).
func BlockData[T HostElement](b *Block) []T {
	if err := b.ctx.alive("BlockData"); err != nil {
		panic(err)
	}
	if err := b.hostMemory("BlockData"); err != nil {
		panic(err)
	}
	var zero T
	ok := b.dtype == dtypeOf(zero)
	if _, bits := any(zero).(uint16); bits {
		ok = ok || b.dtype == F16 || b.dtype == BF16
	}
	if !ok {
		panic(invalid("BlockData", "T: a %v block read as %T", b.dtype, zero))
	}
	n := b.Size()
	if n == 0 || b.data == nil {
		return []T{}
	}
	return unsafe.Slice((*T)(b.data), n)
}

// hostMemory refuses to let host code touch a block that is not host
// memory: a device pointer read as a slice would fault or read garbage.
func (b *Block) hostMemory(what string) error {
	if b.kind.HostAddressable() {
		return nil
	}
	return invalid(what, "%s is %v memory, which host code must not touch: queue kernels "+
		"on ShardContext.Stream() with Block.Pointer(), or ask for mapped callback memory "+
		"(RuntimeOptions.CallbackMemory = MemoryHostMapped, or SPMD_CALLBACK_MEMORY=mapped)",
		b.origin, b.kind)
}
