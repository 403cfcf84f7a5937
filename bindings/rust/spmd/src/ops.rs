//! Global ops on sharded arrays, as jax.numpy under jax.jit.
//!
//! Each op takes arrays on one mesh and returns a new array whose sharding
//! follows from its operands' (GSPMD's propagation) or is the one
//! [`OpOptions::out_sharding`] asks for. Ops return once their work is
//! queued; errors of that work surface at [`Array::block_until_ready`] or a
//! copy to the host.
//!
//! # Donation
//!
//! An operand is passed either borrowed (`&x`) or by value (`x`). By value
//! it is donated (JAX's donate_argnums): the op may reuse its buffers, and
//! the array is gone afterwards, as the type system already says. This is
//! what makes donation memory-safe: no other reference to a donated array
//! can exist. A donated array is released even when the op fails.
//!
//! ```no_run
//! # fn main() -> spmd::Result<()> {
//! use spmd::{ops, Array, DType, OpOptions, Runtime, Sharding, UnaryOp};
//! let rt = Runtime::new()?;
//! let s = Sharding::single_device(&rt, 0)?;
//! let x = Array::zeros(&s, DType::F32, &[4])?;
//! let y = ops::unary(UnaryOp::Exp, &x, &OpOptions::default())?; // x borrowed
//! let z = ops::unary(UnaryOp::Neg, y, &OpOptions::default())?;  // y donated
//! # let _ = z; Ok(()) }
//! ```
//!
//! A donated array cannot be used again:
//!
//! ```compile_fail
//! # fn main() -> spmd::Result<()> {
//! # use spmd::{ops, Array, DType, OpOptions, Runtime, Sharding, UnaryOp};
//! # let rt = Runtime::new()?;
//! # let s = Sharding::single_device(&rt, 0)?;
//! let x = Array::zeros(&s, DType::F32, &[4])?;
//! let y = ops::unary(UnaryOp::Exp, x, &OpOptions::default())?; // x donated
//! let n = x.size()?; // error[E0382]: borrow of moved value: `x`
//! # Ok(()) }
//! ```
use crate::error::{c_string, Error, Result};
use crate::{c_axes, c_sizes, init_struct, ptr_or_null, sys, Array, DType, Sharding};

/// Elementwise functions of one array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// -x
    Neg,
    /// |x|
    Abs,
    /// e^x
    Exp,
    /// natural logarithm
    Log,
    /// sine
    Sin,
    /// cosine
    Cos,
    /// hyperbolic tangent
    Tanh,
    /// square root
    Sqrt,
    /// 1 / sqrt(x)
    Rsqrt,
    /// jax.nn.relu
    Relu,
    /// jax.nn.sigmoid (lax.logistic)
    Logistic,
    /// jax.nn.gelu(approximate=True)
    GeluTanh,
    /// jax.nn.gelu(approximate=False)
    GeluExact,
}

impl UnaryOp {
    /// jax.nn.sigmoid is lax.logistic.
    pub const SIGMOID: UnaryOp = UnaryOp::Logistic;

    /// The C value.
    pub fn to_raw(self) -> sys::spmd_unary_op {
        match self {
            UnaryOp::Neg => sys::SPMD_UNARY_NEG,
            UnaryOp::Abs => sys::SPMD_UNARY_ABS,
            UnaryOp::Exp => sys::SPMD_UNARY_EXP,
            UnaryOp::Log => sys::SPMD_UNARY_LOG,
            UnaryOp::Sin => sys::SPMD_UNARY_SIN,
            UnaryOp::Cos => sys::SPMD_UNARY_COS,
            UnaryOp::Tanh => sys::SPMD_UNARY_TANH,
            UnaryOp::Sqrt => sys::SPMD_UNARY_SQRT,
            UnaryOp::Rsqrt => sys::SPMD_UNARY_RSQRT,
            UnaryOp::Relu => sys::SPMD_UNARY_RELU,
            UnaryOp::Logistic => sys::SPMD_UNARY_LOGISTIC,
            UnaryOp::GeluTanh => sys::SPMD_UNARY_GELU_TANH,
            UnaryOp::GeluExact => sys::SPMD_UNARY_GELU_EXACT,
        }
    }
}

/// Elementwise functions of two arrays (or an array and a scalar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// x + y (bool: or)
    Add,
    /// x - y
    Sub,
    /// x * y (bool: and)
    Mul,
    /// true division
    Div,
    /// jnp.maximum
    Max,
    /// jnp.minimum
    Min,
    /// x ** y
    Pow,
    /// x == y
    Eq,
    /// x != y
    Ne,
    /// x < y
    Lt,
    /// x <= y
    Le,
    /// x > y
    Gt,
    /// x >= y
    Ge,
}

impl BinaryOp {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_binary_op {
        match self {
            BinaryOp::Add => sys::SPMD_BINARY_ADD,
            BinaryOp::Sub => sys::SPMD_BINARY_SUB,
            BinaryOp::Mul => sys::SPMD_BINARY_MUL,
            BinaryOp::Div => sys::SPMD_BINARY_DIV,
            BinaryOp::Max => sys::SPMD_BINARY_MAX,
            BinaryOp::Min => sys::SPMD_BINARY_MIN,
            BinaryOp::Pow => sys::SPMD_BINARY_POW,
            BinaryOp::Eq => sys::SPMD_BINARY_EQ,
            BinaryOp::Ne => sys::SPMD_BINARY_NE,
            BinaryOp::Lt => sys::SPMD_BINARY_LT,
            BinaryOp::Le => sys::SPMD_BINARY_LE,
            BinaryOp::Gt => sys::SPMD_BINARY_GT,
            BinaryOp::Ge => sys::SPMD_BINARY_GE,
        }
    }
}

/// Reductions over axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// jnp.sum
    Sum,
    /// jnp.mean
    Mean,
    /// jnp.max
    Max,
    /// jnp.min
    Min,
}

impl ReduceOp {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_reduce_op {
        match self {
            ReduceOp::Sum => sys::SPMD_REDUCE_SUM,
            ReduceOp::Mean => sys::SPMD_REDUCE_MEAN,
            ReduceOp::Max => sys::SPMD_REDUCE_MAX,
            ReduceOp::Min => sys::SPMD_REDUCE_MIN,
        }
    }
}

/// What a caller may ask of any op, built from the defaults:
/// `OpOptions::new().out_sharding(&s)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpOptions<'a> {
    /// The result's sharding (with_sharding_constraint), on the operands'
    /// mesh; `None`: the propagated one.
    pub out_sharding: Option<&'a Sharding>,
}

impl<'a> OpOptions<'a> {
    /// The defaults: the result's sharding is the propagated one.
    pub fn new() -> OpOptions<'a> {
        OpOptions::default()
    }

    /// Asks for the result's sharding (jax.lax.with_sharding_constraint,
    /// jit's out_shardings).
    pub fn out_sharding(mut self, sharding: &'a Sharding) -> OpOptions<'a> {
        self.out_sharding = Some(sharding);
        self
    }

    fn to_sys(self, donate: u32) -> Result<sys::spmd_op_options> {
        let mut o = init_struct(sys::spmd_op_options_init)?;
        o.out_sharding = self.out_sharding.map_or(std::ptr::null(), |s| s.as_ptr() as *const _);
        o.donate = donate;
        Ok(o)
    }
}

/// An op's array operand: borrowed, or donated (moved in; see the module
/// docs). `&x` and `x` both convert into it.
#[derive(Debug)]
pub enum Operand<'a> {
    /// Read by the op; the caller keeps it.
    Borrowed(&'a Array),
    /// Consumed by the op, which may reuse its buffers.
    Donated(Array),
}

impl<'a> Operand<'a> {
    fn ptr(&self) -> *const sys::spmd_array {
        match self {
            Operand::Borrowed(a) => a.as_ptr(),
            Operand::Donated(a) => a.as_ptr(),
        }
    }

    fn donated(&self) -> bool {
        matches!(self, Operand::Donated(_))
    }
}

impl<'a> From<&'a Array> for Operand<'a> {
    fn from(a: &'a Array) -> Operand<'a> {
        Operand::Borrowed(a)
    }
}

impl<'a> From<Array> for Operand<'a> {
    fn from(a: Array) -> Operand<'a> {
        Operand::Donated(a)
    }
}

/// Runs an op over `operands` (donation bits from their kind) and takes its
/// result. Donated operands drop afterwards: the library has consumed them
/// (or refused the call), and destroying a consumed handle is allowed.
/// Inside a [`Program::record`](crate::Program::record) closure a donated
/// value is consumed the same way; the program decides buffer reuse.
fn run(
    operands: &[&Operand<'_>],
    options: &OpOptions<'_>,
    call: impl FnOnce(*const sys::spmd_op_options, *mut *mut sys::spmd_array) -> sys::spmd_status,
) -> Result<Array> {
    let donate = operands.iter().enumerate().filter(|(_, o)| o.donated()).map(|(i, _)| 1u32 << i).sum();
    let o = options.to_sys(donate)?;
    Array::from_call(|out| call(&o, out))
}

/// An elementwise function of x; the result keeps x's sharding.
pub fn unary<'a>(op: UnaryOp, x: impl Into<Operand<'a>>, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_unary(op.to_raw(), x.ptr(), o, out) })
}

/// jnp.astype: x converted to `dtype`, keeping its sharding.
pub fn astype<'a>(x: impl Into<Operand<'a>>, dtype: DType, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_astype(x.ptr(), dtype.to_raw(), o, out) })
}

/// x op y with NumPy broadcasting, in JAX's promoted dtype.
pub fn binary<'a, 'b>(
    op: BinaryOp,
    x: impl Into<Operand<'a>>,
    y: impl Into<Operand<'b>>,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let (x, y) = (x.into(), y.into());
    // SAFETY: live operands, valid options and out pointer.
    run(&[&x, &y], options, |o, out| unsafe { sys::spmd_binary(op.to_raw(), x.ptr(), y.ptr(), o, out) })
}

/// x op s for a Python-style (weakly typed) scalar s.
pub fn binary_scalar<'a>(op: BinaryOp, x: impl Into<Operand<'a>>, s: f64, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_binary_scalar(op.to_raw(), x.ptr(), s, o, out) })
}

/// s op x for a Python-style scalar s (1 - x, 2 / x).
pub fn scalar_binary<'a>(op: BinaryOp, s: f64, x: impl Into<Operand<'a>>, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_scalar_binary(op.to_raw(), s, x.ptr(), o, out) })
}

/// jnp.where(cond, x, y) with broadcasting.
pub fn where_<'a, 'b, 'c>(
    cond: impl Into<Operand<'a>>,
    x: impl Into<Operand<'b>>,
    y: impl Into<Operand<'c>>,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let (c, x, y) = (cond.into(), x.into(), y.into());
    // SAFETY: live operands, valid options and out pointer.
    run(&[&c, &x, &y], options, |o, out| unsafe { sys::spmd_where(c.ptr(), x.ptr(), y.ptr(), o, out) })
}

/// A reduction over `axes` (every dimension when empty), as
/// jnp.sum(x, axis=axes, keepdims=keepdims).
pub fn reduce<'a>(
    op: ReduceOp,
    x: impl Into<Operand<'a>>,
    axes: &[isize],
    keepdims: bool,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let x = x.into();
    let axes = c_axes(axes);
    // SAFETY: axes holds naxes values; live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe {
        sys::spmd_reduce(op.to_raw(), x.ptr(), axes.len(), ptr_or_null(&axes), keepdims as i32, o, out)
    })
}

/// jnp.argmax(x, axis): int32 indices of the first largest value.
pub fn argmax<'a>(x: impl Into<Operand<'a>>, axis: isize, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_argmax(x.ptr(), axis as i64, o, out) })
}

/// jnp.argmin(x, axis): int32 indices of the first smallest value.
pub fn argmin<'a>(x: impl Into<Operand<'a>>, axis: isize, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_argmin(x.ptr(), axis as i64, o, out) })
}

/// jnp.cumsum(x, axis): the running sum along `axis`, in x's dtype (bool
/// sums as int32), x's sharding kept.
pub fn cumsum<'a>(x: impl Into<Operand<'a>>, axis: isize, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_cumsum(x.ptr(), axis as i64, o, out) })
}

/// jnp.take(a, indices, axis=axis): the elements of `a` at `indices` (int32,
/// int64 or uint8) along `axis`; an index below 0 counts from the end, one
/// still out of range gives JAX's fill value (NaN for floats).
pub fn take<'a, 'b>(
    a: impl Into<Operand<'a>>,
    indices: impl Into<Operand<'b>>,
    axis: isize,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let (a, indices) = (a.into(), indices.into());
    // SAFETY: live operands, valid options and out pointer.
    run(&[&a, &indices], options, |o, out| unsafe { sys::spmd_take(a.ptr(), indices.ptr(), axis as i64, o, out) })
}

/// x.at\[(slice(None),) * axis + (indices,)\].add(updates): `x` with
/// `updates` (of shape x.shape\[:axis\] + indices.shape + x.shape\[axis+1:\])
/// added at `indices` (int32, int64 or uint8) along `axis`; an index below 0
/// counts from the end, one still out of range is dropped, repeats accumulate.
pub fn scatter_add<'a, 'b, 'c>(
    x: impl Into<Operand<'a>>,
    indices: impl Into<Operand<'b>>,
    updates: impl Into<Operand<'c>>,
    axis: isize,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let (x, indices, updates) = (x.into(), indices.into(), updates.into());
    // SAFETY: live operands, valid options and out pointer.
    run(&[&x, &indices, &updates], options, |o, out| unsafe {
        sys::spmd_scatter_add(x.ptr(), indices.ptr(), updates.ptr(), axis as i64, o, out)
    })
}

/// jax.nn.one_hot(x, num_classes, dtype=dtype, axis=axis): 1 where x equals
/// the class along a new dimension `axis` (-1: last), 0 elsewhere. The
/// operand is borrowed (one_hot takes no donation).
pub fn one_hot(x: &Array, num_classes: usize, axis: isize, dtype: DType, options: &OpOptions<'_>) -> Result<Array> {
    let n = i64::try_from(num_classes).map_err(|_| Error::invalid("num_classes: too large"))?;
    // SAFETY: live operand, valid options and out pointer.
    run(&[], options, |o, out| unsafe { sys::spmd_one_hot(x.as_ptr(), n, axis as i64, dtype.to_raw(), o, out) })
}

/// jax.nn.softmax(x, axis), or log_softmax when `log`.
pub fn softmax<'a>(x: impl Into<Operand<'a>>, axis: isize, log: bool, options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    // SAFETY: live operand, valid options and out pointer.
    run(&[&x], options, |o, out| unsafe { sys::spmd_softmax(x.ptr(), axis as i64, log as i32, o, out) })
}

/// lax.dot_general's dimension numbers: batch and contracting dimensions,
/// in pairs (the lhs and rhs lists have equal lengths).
#[derive(Debug, Clone, Copy, Default)]
pub struct DotDims<'a> {
    /// Batch dimensions of lhs.
    pub lhs_batch: &'a [isize],
    /// Batch dimensions of rhs, one per lhs batch dimension.
    pub rhs_batch: &'a [isize],
    /// Contracting dimensions of lhs.
    pub lhs_contract: &'a [isize],
    /// Contracting dimensions of rhs, one per lhs contracting dimension.
    pub rhs_contract: &'a [isize],
}

/// lax.dot_general: the result's dimensions are the batch ones, then lhs's
/// free ones, then rhs's.
pub fn dot_general<'a, 'b>(
    lhs: impl Into<Operand<'a>>,
    rhs: impl Into<Operand<'b>>,
    dims: &DotDims<'_>,
    options: &OpOptions<'_>,
) -> Result<Array> {
    if dims.lhs_batch.len() != dims.rhs_batch.len() || dims.lhs_contract.len() != dims.rhs_contract.len() {
        return Err(Error::invalid(format!(
            "dot_general: dims pair {} lhs with {} rhs batch dimensions and {} lhs with {} rhs contracting ones",
            dims.lhs_batch.len(),
            dims.rhs_batch.len(),
            dims.lhs_contract.len(),
            dims.rhs_contract.len()
        )));
    }
    let (lhs_batch, rhs_batch) = (c_axes(dims.lhs_batch), c_axes(dims.rhs_batch));
    let (lhs_contract, rhs_contract) = (c_axes(dims.lhs_contract), c_axes(dims.rhs_contract));
    let mut d = init_struct(sys::spmd_dot_dims_init)?;
    d.nbatch = lhs_batch.len();
    d.lhs_batch = ptr_or_null(&lhs_batch);
    d.rhs_batch = ptr_or_null(&rhs_batch);
    d.ncontract = lhs_contract.len();
    d.lhs_contract = ptr_or_null(&lhs_contract);
    d.rhs_contract = ptr_or_null(&rhs_contract);
    let (l, r) = (lhs.into(), rhs.into());
    // SAFETY: d points at slices alive for the call; live operands.
    run(&[&l, &r], options, |o, out| unsafe { sys::spmd_dot_general(l.ptr(), r.ptr(), &d, o, out) })
}

/// jnp.matmul.
pub fn matmul<'a, 'b>(a: impl Into<Operand<'a>>, b: impl Into<Operand<'b>>, options: &OpOptions<'_>) -> Result<Array> {
    let (a, b) = (a.into(), b.into());
    // SAFETY: live operands, valid options and out pointer.
    run(&[&a, &b], options, |o, out| unsafe { sys::spmd_matmul(a.ptr(), b.ptr(), o, out) })
}

/// jnp.einsum of two operands with an explicit output ("bhqd,bhkd->bhqk").
pub fn einsum<'a, 'b>(
    subscripts: &str,
    a: impl Into<Operand<'a>>,
    b: impl Into<Operand<'b>>,
    options: &OpOptions<'_>,
) -> Result<Array> {
    let eq = c_string("einsum", subscripts)?;
    let (a, b) = (a.into(), b.into());
    // SAFETY: valid string; live operands, valid options and out pointer.
    run(&[&a, &b], options, |o, out| unsafe { sys::spmd_einsum(eq.as_ptr(), a.ptr(), b.ptr(), o, out) })
}

/// jnp.transpose(x, perm); an empty perm reverses the dimensions.
pub fn transpose<'a>(x: impl Into<Operand<'a>>, perm: &[isize], options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    let perm = c_axes(perm);
    // SAFETY: perm holds naxes values.
    run(&[&x], options, |o, out| unsafe { sys::spmd_transpose(x.ptr(), perm.len(), ptr_or_null(&perm), o, out) })
}

/// jnp.reshape(x, shape) (one -1 is inferred, hence `isize`).
pub fn reshape<'a>(x: impl Into<Operand<'a>>, shape: &[isize], options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    let shape = c_axes(shape);
    // SAFETY: shape holds ndim values.
    run(&[&x], options, |o, out| unsafe { sys::spmd_reshape(x.ptr(), shape.len(), ptr_or_null(&shape), o, out) })
}

/// jnp.broadcast_to(x, shape).
pub fn broadcast_to<'a>(x: impl Into<Operand<'a>>, shape: &[usize], options: &OpOptions<'_>) -> Result<Array> {
    let x = x.into();
    let shape = c_sizes("broadcast_to: shape", shape)?;
    // SAFETY: shape holds ndim values.
    run(&[&x], options, |o, out| unsafe { sys::spmd_broadcast_to(x.ptr(), shape.len(), ptr_or_null(&shape), o, out) })
}

/// `x[start:stop]` with unit steps (lax.slice); one start and stop per
/// dimension.
pub fn slice<'a>(x: impl Into<Operand<'a>>, start: &[usize], stop: &[usize], options: &OpOptions<'_>) -> Result<Array> {
    if start.len() != stop.len() {
        return Err(Error::invalid(format!("slice: {} starts but {} stops", start.len(), stop.len())));
    }
    let (start, stop) = (c_sizes("slice: start", start)?, c_sizes("slice: stop", stop)?);
    let x = x.into();
    // SAFETY: start and stop hold ndim values each.
    run(&[&x], options, |o, out| unsafe {
        sys::spmd_slice(x.ptr(), start.len(), ptr_or_null(&start), ptr_or_null(&stop), o, out)
    })
}

/// `x[start:stop:strides]` (lax.slice with strides); one start, stop and
/// stride per dimension, each stride at least 1.
pub fn slice_strided<'a>(
    x: impl Into<Operand<'a>>,
    start: &[usize],
    stop: &[usize],
    strides: &[usize],
    options: &OpOptions<'_>,
) -> Result<Array> {
    if start.len() != stop.len() || start.len() != strides.len() {
        return Err(Error::invalid(format!(
            "slice_strided: {} starts, {} stops and {} strides",
            start.len(),
            stop.len(),
            strides.len()
        )));
    }
    let start = c_sizes("slice_strided: start", start)?;
    let stop = c_sizes("slice_strided: stop", stop)?;
    let strides = c_sizes("slice_strided: strides", strides)?;
    let x = x.into();
    // SAFETY: start, stop and strides hold ndim values each.
    run(&[&x], options, |o, out| unsafe {
        sys::spmd_slice_strided(
            x.ptr(),
            start.len(),
            ptr_or_null(&start),
            ptr_or_null(&stop),
            ptr_or_null(&strides),
            o,
            out,
        )
    })
}

/// lax.dynamic_slice(x, start, sizes): the window of `sizes` at `start`; a
/// negative start counts from the end and a window past an edge is moved
/// back inside x.
pub fn dynamic_slice<'a>(
    x: impl Into<Operand<'a>>,
    start: &[isize],
    sizes: &[usize],
    options: &OpOptions<'_>,
) -> Result<Array> {
    if start.len() != sizes.len() {
        return Err(Error::invalid(format!("dynamic_slice: {} starts but {} sizes", start.len(), sizes.len())));
    }
    let (start, sizes) = (c_axes(start), c_sizes("dynamic_slice: sizes", sizes)?);
    let x = x.into();
    // SAFETY: start and sizes hold ndim values each.
    run(&[&x], options, |o, out| unsafe {
        sys::spmd_dynamic_slice(x.ptr(), start.len(), ptr_or_null(&start), ptr_or_null(&sizes), o, out)
    })
}

/// jnp.einsum of one to four operands (`"ij,jk,kl->il"`): three or four
/// are contracted a pair at a time in jnp.einsum's order (the fewest
/// flops). Donation is not offered: the arrays are borrowed.
pub fn einsum_n(subscripts: &str, xs: &[&Array], options: &OpOptions<'_>) -> Result<Array> {
    let eq = c_string("einsum_n", subscripts)?;
    let ptrs: Vec<*const sys::spmd_array> = xs.iter().map(|a| a.as_ptr() as *const _).collect();
    // SAFETY: valid string; ptrs holds n live arrays.
    run(&[], options, |o, out| unsafe { sys::spmd_einsum_n(eq.as_ptr(), ptrs.len(), ptr_or_null(&ptrs), o, out) })
}

/// jnp.concatenate(xs, axis). Donation is not offered: the arrays are
/// borrowed.
pub fn concatenate(xs: &[&Array], axis: isize, options: &OpOptions<'_>) -> Result<Array> {
    let ptrs: Vec<*const sys::spmd_array> = xs.iter().map(|a| a.as_ptr() as *const _).collect();
    // SAFETY: ptrs holds n live arrays.
    run(&[], options, |o, out| unsafe { sys::spmd_concatenate(ptrs.len(), ptr_or_null(&ptrs), axis as i64, o, out) })
}
