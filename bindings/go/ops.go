package spmd

import (
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// The global ops work on sharded arrays as jax.numpy does under jax.jit:
// each returns a new array whose sharding follows from its operands' (GSPMD's
// propagation rules) or is the one OpOptions.OutSharding asks for
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
	ReduceSum  ReduceOp = 1 // jnp.sum (bool and uint8 sum in int32)
	ReduceMean ReduceOp = 2 // jnp.mean (integers give floats)
	ReduceMax  ReduceOp = 3 // jnp.max (NaN wins)
	ReduceMin  ReduceOp = 4 // jnp.min (NaN wins)
)

// OpOptions is what a caller may ask of any op; nil or zero fields take the
// defaults.
type OpOptions struct {
	// OutSharding is the result's sharding, on the operands' mesh
	// (with_sharding_constraint / out_shardings); nil: the propagated one.
	OutSharding *Sharding
	// Donate lists operands (by position) the op consumes (donate_argnums):
	// the result may reuse their buffers, and every later use of a donated
	// Array but Close fails with ErrInvalidArgument. A call refused before
	// the op runs leaves them usable.
	Donate []int
}

// opOptions makes libspmd's struct (nil for nil options) and its release.
func opOptions(o *OpOptions) (capi.Spmd_op_options, func(), error) {
	if o == nil {
		return nil, func() {}, nil
	}
	var donate uint
	for _, i := range o.Donate {
		if i < 0 || i >= 32 {
			return nil, nil, invalid("spmd: OpOptions.Donate names operand %d", i)
		}
		donate |= 1 << uint(i)
	}
	c := capi.NewSpmd_op_options()
	release := func() {
		capi.DeleteSpmd_op_options(c)
		runtime.KeepAlive(o.OutSharding)
	}
	if err := check(capi.Spmd_op_options_init(c, capi.SizeofOpOptions)); err != nil {
		release()
		return nil, nil, err
	}
	c.SetOut_sharding(o.OutSharding.handle())
	c.SetDonate(donate)
	return c, release, nil
}

// op runs call with the options' struct and wraps the new array.
func op(opts *OpOptions, call func(o capi.Spmd_op_options, out *uintptr) error, operands ...*Array) (*Array, error) {
	defer runtime.KeepAlive(operands)
	o, release, err := opOptions(opts)
	if err != nil {
		return nil, err
	}
	defer release()
	return made(newArray, func(h *uintptr) error { return call(o, h) })
}

// Unary applies an elementwise function; the result keeps x's sharding.
// ErrInvalidArgument for an op JAX refuses for x's dtype (Neg of bool).
func Unary(f UnaryOp, x *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_unary(capi.Enum_SS_spmd_unary_op(f), x.handle(), o, out)
	}, x)
}

// Astype is jnp.astype: x converted to dtype, keeping its sharding.
func Astype(x *Array, dtype DType, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_astype(x.handle(), dtypeC(dtype), o, out)
	}, x)
}

// Binary is x op y with NumPy broadcasting, in JAX's promoted dtype
// (comparisons give bool); both on one mesh. ErrInvalidArgument for shapes
// that do not broadcast (both in the message).
func Binary(f BinaryOp, x, y *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_binary(capi.Enum_SS_spmd_binary_op(f), x.handle(), y.handle(), o, out)
	}, x, y)
}

// BinaryScalar is x op s for a Python-style (weakly typed) scalar s: a float
// array keeps its dtype, an integer array keeps it for an integral s.
func BinaryScalar(f BinaryOp, x *Array, s float64, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_binary_scalar(capi.Enum_SS_spmd_binary_op(f), x.handle(), s, o, out)
	}, x)
}

// ScalarBinary is s op x, the scalar on the left (1 - x, 2 / x).
func ScalarBinary(f BinaryOp, s float64, x *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_scalar_binary(capi.Enum_SS_spmd_binary_op(f), s, x.handle(), o, out)
	}, x)
}

// Where is jnp.where(cond, x, y) with broadcasting.
func Where(cond, x, y *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_where(cond.handle(), x.handle(), y.handle(), o, out)
	}, cond, x, y)
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Reduce is jnp.sum(x, axis=axes, keepdims=keepdims) and the like; no axes
// reduce every dimension (negative axes count from the end). A reduced
// dimension split over mesh axes ends in a psum over them.
func Reduce(f ReduceOp, x *Array, axes []int, keepdims bool, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_reduce(capi.Enum_SS_spmd_reduce_op(f), x.handle(), int64s(axes), intOf(keepdims), o, out)
	}, x)
}

// Argmax is jnp.argmax(x, axis): int32 indices of the first largest value.
func Argmax(x *Array, axis int, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_argmax(x.handle(), int64(axis), o, out)
	}, x)
}

// Softmax is jax.nn.softmax(x, axis), or log_softmax when log is true.
func Softmax(x *Array, axis int, log bool, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_softmax(x.handle(), int64(axis), intOf(log), o, out)
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
func DotGeneral(lhs, rhs *Array, dims DotDims, opts *OpOptions) (*Array, error) {
	if len(dims.LhsBatch) != len(dims.RhsBatch) || len(dims.LhsContract) != len(dims.RhsContract) {
		return nil, invalid("spmd.DotGeneral: unpaired dimension numbers %+v", dims)
	}
	d := capi.NewSpmd_dot_dims()
	defer capi.DeleteSpmd_dot_dims(d)
	if err := check(capi.Spmd_dot_dims_init(d, capi.SizeofDotDims)); err != nil {
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
			return nil, &Error{Status: StatusOutOfMemory, Message: "spmd.DotGeneral: dimension numbers"}
		}
	}
	d.SetNbatch(int64(len(dims.LhsBatch)))
	d.SetLhs_batch(arrays[0])
	d.SetRhs_batch(arrays[1])
	d.SetNcontract(int64(len(dims.LhsContract)))
	d.SetLhs_contract(arrays[2])
	d.SetRhs_contract(arrays[3])
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_dot_general(lhs.handle(), rhs.handle(), d, o, out)
	}, lhs, rhs)
}

// Matmul is jnp.matmul (a @ b) for operands of one or two dimensions, of
// equal batch dimensions, or a batched a with a two-dimensional b.
func Matmul(a, b *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_matmul(a.handle(), b.handle(), o, out)
	}, a, b)
}

// Einsum is jnp.einsum of two operands with an explicit output
// ("bhqd,bhkd->bhqk").
func Einsum(subscripts string, a, b *Array, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_einsum(subscripts, a.handle(), b.handle(), o, out)
	}, a, b)
}

// Transpose is jnp.transpose(x, perm); no perm reverses the dimensions. The
// sharding moves with the dimensions.
func Transpose(x *Array, perm []int, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_transpose(x.handle(), int64s(perm), o, out)
	}, x)
}

// Reshape is jnp.reshape(x, shape) (one -1 is inferred).
func Reshape(x *Array, shape []int64, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_reshape(x.handle(), shape, o, out)
	}, x)
}

// BroadcastTo is jnp.broadcast_to(x, shape): new and broadcast dimensions
// are replicated, the others keep x's sharding.
func BroadcastTo(x *Array, shape []int64, opts *OpOptions) (*Array, error) {
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_broadcast_to(x.handle(), shape, o, out)
	}, x)
}

// Slice is x[start:stop] with unit steps (lax.slice), one start and stop per
// dimension; the result keeps x's spec.
func Slice(x *Array, start, stop []int64, opts *OpOptions) (*Array, error) {
	if len(start) != len(stop) {
		return nil, invalid("spmd.Slice: %d starts and %d stops", len(start), len(stop))
	}
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_slice(x.handle(), start, stop, o, out)
	}, x)
}

// Concatenate is jnp.concatenate(xs, axis) in the operands' promoted dtype;
// the result keeps the first operand's spec. Donation is not offered.
func Concatenate(xs []*Array, axis int, opts *OpOptions) (*Array, error) {
	hs := handles(xs)
	return op(opts, func(o capi.Spmd_op_options, out *uintptr) error {
		return capi.Spmd_concatenate(int64(len(hs)), hs, int64(axis), o, out)
	}, xs...)
}
