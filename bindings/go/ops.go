package spmd

import (
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// The global ops work on sharded arrays as jax.numpy does under jax.jit:
// each returns a new array whose sharding follows from its operands' (GSPMD's
// propagation rules) or is the one the OutSharding option asks for
// (jax.lax.with_sharding_constraint); operands are resharded as needed and
// partial results combined across the mesh. Ops return once their work is
// queued; errors of that work surface at BlockUntilReady or a copy to the
// host. Dtypes follow JAX's promotion. The caller closes every array an op
// returns.

// UnaryOp is an elementwise function of one array.
type UnaryOp int

// The elementwise functions of one array.
const (
	Neg       UnaryOp = 1  // -x
	Abs       UnaryOp = 2  // |x|
	Exp       UnaryOp = 3  // e^x
	Log       UnaryOp = 4  // natural logarithm
	Sin       UnaryOp = 5  // sine
	Cos       UnaryOp = 6  // cosine
	Tanh      UnaryOp = 7  // hyperbolic tangent
	Sqrt      UnaryOp = 8  // square root
	Rsqrt     UnaryOp = 9  // 1 / sqrt(x)
	Relu      UnaryOp = 10 // jax.nn.relu: max(x, 0)
	Logistic  UnaryOp = 11 // jax.nn.sigmoid: 1 / (1 + e^-x)
	GeluTanh  UnaryOp = 12 // jax.nn.gelu(approximate=True)
	GeluExact UnaryOp = 13 // jax.nn.gelu(approximate=False)
	Sigmoid           = Logistic
)

// BinaryOp is an elementwise function of two arrays, or of an array and a
// scalar.
type BinaryOp int

// The elementwise functions of two operands.
const (
	Add BinaryOp = 1  // x + y (bool: or)
	Sub BinaryOp = 2  // x - y (not for bool)
	Mul BinaryOp = 3  // x * y (bool: and)
	Div BinaryOp = 4  // true division: integers give floats
	Max BinaryOp = 5  // jnp.maximum (NaN wins)
	Min BinaryOp = 6  // jnp.minimum (NaN wins)
	Pow BinaryOp = 7  // x ** y
	Eq  BinaryOp = 8  // x == y, a bool array
	Ne  BinaryOp = 9  // x != y
	Lt  BinaryOp = 10 // x < y
	Le  BinaryOp = 11 // x <= y
	Gt  BinaryOp = 12 // x > y
	Ge  BinaryOp = 13 // x >= y
)

// ReduceOp is a reduction over axes.
type ReduceOp int

// The reductions.
const (
	ReduceSum  ReduceOp = 1 // jnp.sum (bool, int8 and int16 sum in int32; uint8 and uint16 in uint32)
	ReduceMean ReduceOp = 2 // jnp.mean (integers give floats)
	ReduceMax  ReduceOp = 3 // jnp.max (NaN wins)
	ReduceMin  ReduceOp = 4 // jnp.min (NaN wins)
)

// An OpOption is an optional argument of a global op, given after its
// operands:
//
//	y, err := spmd.Sum(x, []int{1})
//	y, err := spmd.Sum(x, []int{1}, spmd.KeepDims(), spmd.OutSharding(rows))
//	z, err := spmd.Binary(spmd.Add, x, y, spmd.Donate(0))
type OpOption func(*opConfig)

// opConfig is what the options of one op call ask for.
type opConfig struct {
	outSharding *Sharding
	donate      []int
	keepDims    bool
}

// OutSharding asks for the result's sharding, on the operands' mesh
// (jax.lax.with_sharding_constraint, jit's out_shardings); without it the
// result's sharding follows from the operands'.
func OutSharding(s *Sharding) OpOption { return func(c *opConfig) { c.outSharding = s } }

// Donate hands the op the operands at these positions (0 for the first;
// jit's donate_argnums): the result may reuse their buffers, and every
// later use of a donated Array but Close fails with ErrInvalidArgument. A
// call refused before the op runs leaves them usable.
func Donate(operands ...int) OpOption {
	return func(c *opConfig) { c.donate = append(c.donate, operands...) }
}

// KeepDims keeps each reduced dimension as one of size 1 (keepdims=True);
// only the reductions (Sum, Mean, Reduce) take it.
func KeepDims() OpOption { return func(c *opConfig) { c.keepDims = true } }

// opOptions makes libspmd's struct (nil when no option asks for anything)
// and its release, for the op fn.
func opOptions(fn string, c *opConfig) (capi.Spmd_op_options, func(), error) {
	if c.outSharding == nil && len(c.donate) == 0 {
		return nil, func() {}, nil
	}
	var donate uint
	for _, i := range c.donate {
		if i < 0 || i >= 32 {
			return nil, nil, invalid(fn, "Donate: operand %d is not an operand's position", i)
		}
		donate |= 1 << uint(i)
	}
	o := capi.NewSpmd_op_options()
	release := func() {
		capi.DeleteSpmd_op_options(o)
		runtime.KeepAlive(c.outSharding)
	}
	if err := check(fn, capi.Spmd_op_options_init(o, capi.SizeofOpOptions)); err != nil {
		release()
		return nil, nil, err
	}
	o.SetOut_sharding(c.outSharding.handle())
	o.SetDonate(donate)
	return o, release, nil
}

// configure applies opts; KeepDims is refused unless the op is a reduction.
func configure(fn string, reduction bool, opts []OpOption) (*opConfig, error) {
	c := &opConfig{}
	for _, opt := range opts {
		if opt != nil {
			opt(c)
		}
	}
	if c.keepDims && !reduction {
		return nil, invalid(fn, "KeepDims applies to reductions only")
	}
	return c, nil
}

// op runs call, the op fn, with the options' struct and wraps the new
// array.
func op(fn string, opts []OpOption, call func(o capi.Spmd_op_options, out *uintptr) error, operands ...*Array) (*Array, error) {
	defer runtime.KeepAlive(operands)
	c, err := configure(fn, false, opts)
	if err != nil {
		return nil, err
	}
	return opWith(fn, c, call, operands...)
}

// opWith runs call with the options' struct and wraps the new array, a
// value of the program being recorded when an operand is one (derived).
func opWith(fn string, c *opConfig, call func(o capi.Spmd_op_options, out *uintptr) error, operands ...*Array) (*Array, error) {
	o, release, err := opOptions(fn, c)
	if err != nil {
		return nil, err
	}
	defer release()
	a, err := made(fn, newArray, func(h *uintptr) error { return call(o, h) })
	return derived(a, err, operands...)
}

// Unary applies an elementwise function; the result keeps x's sharding.
// ErrInvalidArgument for an op JAX refuses for x's dtype (Neg of bool).
func Unary(f UnaryOp, x *Array, opts ...OpOption) (*Array, error) {
	return op("Unary", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_unary(capi.Enum_SS_spmd_unary_op(f), x.handle(), o, out)
	}, x)
}

// Astype is jnp.astype: x converted to dtype, keeping its sharding.
func Astype(x *Array, dtype DType, opts ...OpOption) (*Array, error) {
	return op("Astype", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_astype(x.handle(), dtypeC(dtype), o, out)
	}, x)
}

// Binary is x op y with NumPy broadcasting, in JAX's promoted dtype
// (comparisons give bool); both on one mesh. ErrInvalidArgument for shapes
// that do not broadcast (both in the message).
func Binary(f BinaryOp, x, y *Array, opts ...OpOption) (*Array, error) {
	return op("Binary", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_binary(capi.Enum_SS_spmd_binary_op(f), x.handle(), y.handle(), o, out)
	}, x, y)
}

// BinaryScalar is x op s for a Python-style (weakly typed) scalar s: a float
// array keeps its dtype, an integer array keeps it for an integral s.
func BinaryScalar(f BinaryOp, x *Array, s float64, opts ...OpOption) (*Array, error) {
	return op("BinaryScalar", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_binary_scalar(capi.Enum_SS_spmd_binary_op(f), x.handle(), s, o, out)
	}, x)
}

// ScalarBinary is s op x, the scalar on the left (1 - x, 2 / x).
func ScalarBinary(f BinaryOp, s float64, x *Array, opts ...OpOption) (*Array, error) {
	return op("ScalarBinary", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_scalar_binary(capi.Enum_SS_spmd_binary_op(f), s, x.handle(), o, out)
	}, x)
}

// Where is jnp.where(cond, x, y) with broadcasting.
func Where(cond, x, y *Array, opts ...OpOption) (*Array, error) {
	return op("Where", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_where(cond.handle(), x.handle(), y.handle(), o, out)
	}, cond, x, y)
}

// Reduce is jnp.sum(x, axis=axes) and the like: f over the dimensions
// axes (negative ones count from the end; nil or empty: every dimension),
// which the result drops unless KeepDims is given. A reduced dimension
// split over mesh axes ends in a psum over them.
func Reduce(f ReduceOp, x *Array, axes []int, opts ...OpOption) (*Array, error) {
	return reduce("Reduce", f, x, axes, opts)
}

// Sum is jnp.sum(x, axis=axes): Reduce with ReduceSum. Sum(x, nil) adds
// every element; Sum(x, []int{1}, KeepDims()) keeps dimension 1 as size 1.
func Sum(x *Array, axes []int, opts ...OpOption) (*Array, error) {
	return reduce("Sum", ReduceSum, x, axes, opts)
}

// Mean is jnp.mean(x, axis=axes): Reduce with ReduceMean (integers give
// floats).
func Mean(x *Array, axes []int, opts ...OpOption) (*Array, error) {
	return reduce("Mean", ReduceMean, x, axes, opts)
}

func reduce(fn string, f ReduceOp, x *Array, axes []int, opts []OpOption) (*Array, error) {
	defer runtime.KeepAlive(x)
	c, err := configure(fn, true, opts)
	if err != nil {
		return nil, err
	}
	return opWith(fn, c, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_reduce(capi.Enum_SS_spmd_reduce_op(f), x.handle(), int64s(axes), cBool(c.keepDims), o, out)
	}, x)
}

// Argmax is jnp.argmax(x, axis): int32 indices of the first largest value.
func Argmax(x *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("Argmax", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_argmax(x.handle(), int64(axis), o, out)
	}, x)
}

// Argmin is jnp.argmin(x, axis): int32 indices of the first smallest value
// (a NaN is the smallest).
func Argmin(x *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("Argmin", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_argmin(x.handle(), int64(axis), o, out)
	}, x)
}

// Cumsum is jnp.cumsum(x, axis): the running sum along axis, in x's dtype
// (bool sums as int32), the sharding of x kept.
func Cumsum(x *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("Cumsum", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_cumsum(x.handle(), int64(axis), o, out)
	}, x)
}

// Take is jnp.take(a, indices, axis=axis): the elements of a at indices
// (of any integer type) along axis; an index below 0 counts from the end,
// one still out of range gives JAX's fill value (NaN for floats).
func Take(a, indices *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("Take", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_take(a.handle(), indices.handle(), int64(axis), o, out)
	}, a, indices)
}

// ScatterAdd is x.at[(slice(None),)*axis + (indices,)].add(updates): x with
// updates (of shape x.shape[:axis] + indices.shape + x.shape[axis+1:]) added
// at indices (of any integer type) along axis; an index below 0 counts
// from the end, one still out of range is dropped, repeats accumulate.
func ScatterAdd(x, indices, updates *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("ScatterAdd", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_scatter_add(x.handle(), indices.handle(), updates.handle(), int64(axis), o, out)
	}, x, indices, updates)
}

// OneHot is jax.nn.one_hot(x, numClasses, dtype=dtype, axis=axis): 1 where x
// equals the class along a new dimension axis (-1: last), 0 elsewhere.
func OneHot(x *Array, numClasses, axis int, dtype DType, opts ...OpOption) (*Array, error) {
	return op("OneHot", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_one_hot(x.handle(), int64(numClasses), int64(axis), dtypeC(dtype), o, out)
	}, x)
}

// Softmax is jax.nn.softmax(x, axis).
func Softmax(x *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("Softmax", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_softmax(x.handle(), int64(axis), 0, o, out)
	}, x)
}

// LogSoftmax is jax.nn.log_softmax(x, axis).
func LogSoftmax(x *Array, axis int, opts ...OpOption) (*Array, error) {
	return op("LogSoftmax", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_softmax(x.handle(), int64(axis), 1, o, out)
	}, x)
}

// DotDims are lax.dot_general's dimension numbers: pairs of batch and of
// contracting dimensions (LhsBatch[i] with RhsBatch[i], ...).
type DotDims struct {
	LhsBatch, RhsBatch       []int
	LhsContract, RhsContract []int
}

// DotGeneral is lax.dot_general: the result's dimensions are the batch ones,
// then lhs's free ones, then rhs's.
func DotGeneral(lhs, rhs *Array, dims DotDims, opts ...OpOption) (*Array, error) {
	const fn = "DotGeneral"
	if len(dims.LhsBatch) != len(dims.RhsBatch) || len(dims.LhsContract) != len(dims.RhsContract) {
		return nil, invalid(fn, "dims: unpaired dimension numbers %+v", dims)
	}
	d := capi.NewSpmd_dot_dims()
	defer capi.DeleteSpmd_dot_dims(d)
	if err := check(fn, capi.Spmd_dot_dims_init(d, capi.SizeofDotDims)); err != nil {
		return nil, err
	}
	arrays := []uintptr{
		capi.CopyInt64s(int64s(dims.LhsBatch)), capi.CopyInt64s(int64s(dims.RhsBatch)),
		capi.CopyInt64s(int64s(dims.LhsContract)), capi.CopyInt64s(int64s(dims.RhsContract)),
	}
	defer func() {
		for _, p := range arrays {
			capi.Free(p)
		}
	}()
	for _, p := range arrays {
		if p == 0 {
			return nil, &Error{Status: StatusOutOfMemory, Message: fn + ": dims: dimension numbers"}
		}
	}
	d.SetNbatch(int64(len(dims.LhsBatch)))
	d.SetLhs_batch(arrays[0])
	d.SetRhs_batch(arrays[1])
	d.SetNcontract(int64(len(dims.LhsContract)))
	d.SetLhs_contract(arrays[2])
	d.SetRhs_contract(arrays[3])
	return op(fn, opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_dot_general(lhs.handle(), rhs.handle(), d, o, out)
	}, lhs, rhs)
}

// Matmul is jnp.matmul (a @ b) for operands of one or two dimensions, of
// equal batch dimensions, or a batched a with a two-dimensional b.
func Matmul(a, b *Array, opts ...OpOption) (*Array, error) {
	return op("Matmul", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_matmul(a.handle(), b.handle(), o, out)
	}, a, b)
}

// Einsum is jnp.einsum of two operands with an explicit output
// ("bhqd,bhkd->bhqk").
func Einsum(subscripts string, a, b *Array, opts ...OpOption) (*Array, error) {
	return op("Einsum", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_einsum(subscripts, a.handle(), b.handle(), o, out)
	}, a, b)
}

// EinsumN is jnp.einsum of one to four operands ("ij,jk,kl->il"): three
// or four are contracted a pair at a time in jnp.einsum's order (the
// fewest flops). Donation is not offered.
func EinsumN(subscripts string, xs []*Array, opts ...OpOption) (*Array, error) {
	hs := handles(xs)
	return op("EinsumN", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_einsum_n(subscripts, int64(len(hs)), hs, o, out)
	}, xs...)
}

// Transpose is jnp.transpose(x, perm); a nil perm reverses the dimensions.
// The sharding moves with the dimensions.
func Transpose(x *Array, perm []int, opts ...OpOption) (*Array, error) {
	return op("Transpose", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_transpose(x.handle(), int64s(perm), o, out)
	}, x)
}

// Reshape is jnp.reshape(x, shape) (one -1 is inferred).
func Reshape(x *Array, shape []int, opts ...OpOption) (*Array, error) {
	return op("Reshape", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_reshape(x.handle(), int64s(shape), o, out)
	}, x)
}

// BroadcastTo is jnp.broadcast_to(x, shape): new and broadcast dimensions
// are replicated, the others keep x's sharding.
func BroadcastTo(x *Array, shape []int, opts ...OpOption) (*Array, error) {
	return op("BroadcastTo", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_broadcast_to(x.handle(), int64s(shape), o, out)
	}, x)
}

// Slice is x[start:stop] with unit steps (lax.slice), one start and stop per
// dimension; the result keeps x's spec.
func Slice(x *Array, start, stop []int, opts ...OpOption) (*Array, error) {
	const fn = "Slice"
	if len(start) != len(stop) {
		return nil, invalid(fn, "stop: %d starts and %d stops", len(start), len(stop))
	}
	return op(fn, opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_slice(x.handle(), int64s(start), int64s(stop), o, out)
	}, x)
}

// SliceStrided is x[start:stop:strides] (lax.slice with strides): every
// strides[d]-th element from start[d] below stop[d]; the result keeps x's
// spec where its dimensions divide.
func SliceStrided(x *Array, start, stop, strides []int, opts ...OpOption) (*Array, error) {
	const fn = "SliceStrided"
	if len(start) != len(stop) || len(start) != len(strides) {
		return nil, invalid(fn, "strides: %d starts, %d stops and %d strides", len(start), len(stop), len(strides))
	}
	return op(fn, opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_slice_strided(x.handle(), int64s(start), int64s(stop), int64s(strides), o, out)
	}, x)
}

// DynamicSlice is lax.dynamic_slice(x, start, sizes): the window of sizes
// at start, a negative start counting from the end and a window past an
// edge moved back inside x; placed as Slice places its result.
func DynamicSlice(x *Array, start, sizes []int, opts ...OpOption) (*Array, error) {
	const fn = "DynamicSlice"
	if len(start) != len(sizes) {
		return nil, invalid(fn, "sizes: %d starts and %d sizes", len(start), len(sizes))
	}
	return op(fn, opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_dynamic_slice(x.handle(), int64s(start), int64s(sizes), o, out)
	}, x)
}

// Concatenate is jnp.concatenate(xs, axis) in the operands' promoted dtype;
// the result keeps the first operand's spec. Donation is not offered.
func Concatenate(xs []*Array, axis int, opts ...OpOption) (*Array, error) {
	hs := handles(xs)
	return op("Concatenate", opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_concatenate(int64(len(hs)), hs, int64(axis), o, out)
	}, xs...)
}
