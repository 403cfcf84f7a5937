//! The global ops as methods and operators of [`Array`], as jax.numpy's
//! functions are methods and operators of jax.Array.
//!
//! Every method borrows its operands and returns a new array; the `_with`
//! variants take [`OpOptions`] (`OpOptions::new().out_sharding(&s)`), the
//! others the defaults. The free functions of [`crate::ops`] are the same
//! ops with every argument spelled out, and donation.
//!
//! # Operators return `Result`
//!
//! `+ - * /` and unary `-` work on `&Array` and `Array` (on both sides) and
//! on an array and a scalar (`f64` or `i32`, weakly typed as a Python
//! scalar is in JAX: a float32 `x` gives float32 `&x * 2.0`, an int32 one
//! int32 `&x * 2` and float32 `&x * 0.5`). Two scalar types only, so that a
//! literal's type is known at once (`2.0` is `f64`, `2` is `i32`) and a
//! method call may follow the `?`. An op can fail (arrays
//! on different meshes, shapes that do not broadcast) and a panic in a
//! library is no way to say so, so their `Output` is [`Result<Array>`]:
//! each operation ends in `?`, as each fallible call does.
//!
//! ```no_run
//! # fn main() -> spmd::Result<()> {
//! use spmd::{Array, DType, Runtime, Sharding};
//! let rt = Runtime::new()?;
//! let s = Sharding::single_device(&rt, 0)?;
//! let x = Array::arange(&s, DType::F32, &[2, 3], 0.0, 1.0)?;
//! let y = (2.0 * x.sin()?)?;         // 2 * jnp.sin(x)
//! let z = ((&y + &x)? - 1.0)?;       // y + x - 1
//! let rows = z.sum(&[1])?;           // z.sum(axis=1)
//! let big = rows.greater(0.5)?;      // rows > 0.5
//! # let _ = big; Ok(()) }
//! ```
//!
//! An operand taken by value is donated, as with the free functions: in
//! `2.0 * x.sin()?` the temporary from `sin` is donated to the product,
//! which may reuse its buffers.
use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::ops::{self, BinaryOp, DotDims, OpOptions, ReduceOp, UnaryOp};
use crate::{Array, DType, Result};

mod sealed {
    pub trait Sealed {}
}

/// A Python-style scalar operand: `f64` or `i32` (what the literals `2.0`
/// and `2` are), converted to `f64` and weakly typed, as JAX types a Python
/// scalar (a float32 array times 2.0 is float32; an int32 one times 2 is
/// int32, times 0.5 float32).
pub trait Scalar: sealed::Sealed + Copy {
    /// The value as the C API takes it.
    fn to_f64(self) -> f64;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
scalar!(f64, i32);

/// The second operand of a binary method ([`Array::maximum`],
/// [`Array::power`], [`Array::greater`], ...): an array (`&y`) or a
/// [`Scalar`] (`0.5`).
pub trait Rhs: sealed::Sealed {
    #[doc(hidden)]
    fn apply(self, op: BinaryOp, x: &Array, options: &OpOptions<'_>) -> Result<Array>;
}

impl sealed::Sealed for &Array {}

impl Rhs for &Array {
    fn apply(self, op: BinaryOp, x: &Array, options: &OpOptions<'_>) -> Result<Array> {
        ops::binary(op, x, self, options)
    }
}

impl<S: Scalar> Rhs for S {
    fn apply(self, op: BinaryOp, x: &Array, options: &OpOptions<'_>) -> Result<Array> {
        ops::binary_scalar(op, x, self.to_f64(), options)
    }
}

/// Methods of one elementwise function: `a.sin()`.
macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Result<Array> {
            self.unary($op)
        }
    )*};
}

/// Methods of one binary function of an array or a scalar: `a.maximum(0.0)`.
macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self, y: impl Rhs) -> Result<Array> {
            self.binary($op, y)
        }
    )*};
}

/// A reduction and its `_with` variant: `a.sum(&[1])`.
macro_rules! reduce_methods {
    ($($(#[$doc:meta])* $name:ident, $with:ident => $op:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// `axes` may be negative, counting from the end; empty reduces
        /// every dimension.
        pub fn $name(&self, axes: &[isize]) -> Result<Array> {
            self.reduce_with($op, axes, false, OpOptions::new())
        }

        #[doc = concat!("[`Array::", stringify!($name), "`] with options.")]
        pub fn $with(&self, axes: &[isize], options: OpOptions<'_>) -> Result<Array> {
            self.reduce_with($op, axes, false, options)
        }
    )*};
}

impl Array {
    /// The elementwise function `op` of the array (jnp.sin, jnp.exp, ...).
    pub fn unary(&self, op: UnaryOp) -> Result<Array> {
        ops::unary(op, self, &OpOptions::new())
    }

    /// [`Array::unary`] with options.
    pub fn unary_with(&self, op: UnaryOp, options: OpOptions<'_>) -> Result<Array> {
        ops::unary(op, self, &options)
    }

    unary_methods! {
        /// jnp.negative: -x (also `-&x`).
        negative => UnaryOp::Neg;
        /// jnp.abs.
        abs => UnaryOp::Abs;
        /// jnp.exp.
        exp => UnaryOp::Exp;
        /// jnp.log, the natural logarithm.
        log => UnaryOp::Log;
        /// jnp.sin.
        sin => UnaryOp::Sin;
        /// jnp.cos.
        cos => UnaryOp::Cos;
        /// jnp.tanh.
        tanh => UnaryOp::Tanh;
        /// jnp.sqrt.
        sqrt => UnaryOp::Sqrt;
        /// jax.lax.rsqrt: 1 / sqrt(x).
        rsqrt => UnaryOp::Rsqrt;
        /// jax.nn.relu.
        relu => UnaryOp::Relu;
        /// jax.nn.sigmoid (lax.logistic).
        sigmoid => UnaryOp::Logistic;
        /// jax.nn.gelu(x), whose default is the tanh approximation.
        gelu => UnaryOp::GeluTanh;
        /// jax.nn.gelu(x, approximate=False).
        gelu_exact => UnaryOp::GeluExact;
    }

    /// x.astype(dtype), keeping the sharding.
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        ops::astype(self, dtype, &OpOptions::new())
    }

    /// [`Array::astype`] with options.
    pub fn astype_with(&self, dtype: DType, options: OpOptions<'_>) -> Result<Array> {
        ops::astype(self, dtype, &options)
    }

    /// x op y, for y an array (`&y`, broadcast as NumPy does) or a scalar.
    pub fn binary(&self, op: BinaryOp, y: impl Rhs) -> Result<Array> {
        y.apply(op, self, &OpOptions::new())
    }

    /// [`Array::binary`] with options.
    pub fn binary_with(&self, op: BinaryOp, y: impl Rhs, options: OpOptions<'_>) -> Result<Array> {
        y.apply(op, self, &options)
    }

    binary_methods! {
        /// jnp.maximum(x, y).
        maximum => BinaryOp::Max;
        /// jnp.minimum(x, y).
        minimum => BinaryOp::Min;
        /// x ** y (jnp.power).
        power => BinaryOp::Pow;
        /// x == y (jnp.equal), a bool array.
        equal => BinaryOp::Eq;
        /// x != y (jnp.not_equal), a bool array.
        not_equal => BinaryOp::Ne;
        /// x < y (jnp.less), a bool array.
        less => BinaryOp::Lt;
        /// x <= y (jnp.less_equal), a bool array.
        less_equal => BinaryOp::Le;
        /// x > y (jnp.greater), a bool array.
        greater => BinaryOp::Gt;
        /// x >= y (jnp.greater_equal), a bool array.
        greater_equal => BinaryOp::Ge;
    }

    /// jnp.where(self, x, y): x where this bool array is true, else y.
    pub fn select(&self, x: &Array, y: &Array) -> Result<Array> {
        ops::where_(self, x, y, &OpOptions::new())
    }

    /// The reduction `op` over `axes` (every dimension when empty),
    /// keeping them with size 1 when `keepdims`: x.sum(axis=axes,
    /// keepdims=keepdims).
    pub fn reduce(&self, op: ReduceOp, axes: &[isize], keepdims: bool) -> Result<Array> {
        ops::reduce(op, self, axes, keepdims, &OpOptions::new())
    }

    /// [`Array::reduce`] with options.
    pub fn reduce_with(&self, op: ReduceOp, axes: &[isize], keepdims: bool, options: OpOptions<'_>) -> Result<Array> {
        ops::reduce(op, self, axes, keepdims, &options)
    }

    reduce_methods! {
        /// x.sum(axis=axes).
        sum, sum_with => ReduceOp::Sum;
        /// x.mean(axis=axes).
        mean, mean_with => ReduceOp::Mean;
        /// x.max(axis=axes).
        max, max_with => ReduceOp::Max;
        /// x.min(axis=axes).
        min, min_with => ReduceOp::Min;
    }

    /// x.argmax(axis): int32 indices of the first largest value; `axis`
    /// may be negative.
    pub fn argmax(&self, axis: isize) -> Result<Array> {
        ops::argmax(self, axis, &OpOptions::new())
    }

    /// [`Array::argmax`] with options.
    pub fn argmax_with(&self, axis: isize, options: OpOptions<'_>) -> Result<Array> {
        ops::argmax(self, axis, &options)
    }

    /// x.argmin(axis): int32 indices of the first smallest value; `axis`
    /// may be negative.
    pub fn argmin(&self, axis: isize) -> Result<Array> {
        ops::argmin(self, axis, &OpOptions::new())
    }

    /// [`Array::argmin`] with options.
    pub fn argmin_with(&self, axis: isize, options: OpOptions<'_>) -> Result<Array> {
        ops::argmin(self, axis, &options)
    }

    /// x.cumsum(axis): the running sum along `axis`.
    pub fn cumsum(&self, axis: isize) -> Result<Array> {
        ops::cumsum(self, axis, &OpOptions::new())
    }

    /// [`Array::cumsum`] with options.
    pub fn cumsum_with(&self, axis: isize, options: OpOptions<'_>) -> Result<Array> {
        ops::cumsum(self, axis, &options)
    }

    /// jnp.take(x, indices, axis=axis).
    pub fn take(&self, indices: &Array, axis: isize) -> Result<Array> {
        ops::take(self, indices, axis, &OpOptions::new())
    }

    /// x.at\[(slice(None),) * axis + (indices,)\].add(updates).
    pub fn scatter_add(&self, indices: &Array, updates: &Array, axis: isize) -> Result<Array> {
        ops::scatter_add(self, indices, updates, axis, &OpOptions::new())
    }

    /// jax.nn.one_hot(x, num_classes, dtype=dtype): a new last dimension of
    /// `num_classes`, 1 where x equals the class.
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Array> {
        ops::one_hot(self, num_classes, -1, dtype, &OpOptions::new())
    }

    /// jax.nn.softmax(x, axis).
    pub fn softmax(&self, axis: isize) -> Result<Array> {
        ops::softmax(self, axis, false, &OpOptions::new())
    }

    /// jax.nn.log_softmax(x, axis).
    pub fn log_softmax(&self, axis: isize) -> Result<Array> {
        ops::softmax(self, axis, true, &OpOptions::new())
    }

    /// x @ y (jnp.matmul).
    pub fn matmul(&self, y: &Array) -> Result<Array> {
        ops::matmul(self, y, &OpOptions::new())
    }

    /// [`Array::matmul`] with options.
    pub fn matmul_with(&self, y: &Array, options: OpOptions<'_>) -> Result<Array> {
        ops::matmul(self, y, &options)
    }

    /// lax.dot_general(x, y, dims).
    pub fn dot_general(&self, y: &Array, dims: &DotDims<'_>) -> Result<Array> {
        ops::dot_general(self, y, dims, &OpOptions::new())
    }

    /// x.transpose(perm); an empty perm reverses the dimensions (x.T).
    pub fn transpose(&self, perm: &[isize]) -> Result<Array> {
        ops::transpose(self, perm, &OpOptions::new())
    }

    /// [`Array::transpose`] with options.
    pub fn transpose_with(&self, perm: &[isize], options: OpOptions<'_>) -> Result<Array> {
        ops::transpose(self, perm, &options)
    }

    /// x.reshape(shape); one size may be -1, inferred (hence `isize`).
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        ops::reshape(self, shape, &OpOptions::new())
    }

    /// [`Array::reshape`] with options.
    pub fn reshape_with(&self, shape: &[isize], options: OpOptions<'_>) -> Result<Array> {
        ops::reshape(self, shape, &options)
    }

    /// jnp.broadcast_to(x, shape).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        ops::broadcast_to(self, shape, &OpOptions::new())
    }

    /// `x[start:stop]`, one start and stop per dimension (lax.slice).
    pub fn slice(&self, start: &[usize], stop: &[usize]) -> Result<Array> {
        ops::slice(self, start, stop, &OpOptions::new())
    }

    /// `x[start:stop:strides]` (lax.slice with strides).
    pub fn slice_strided(&self, start: &[usize], stop: &[usize], strides: &[usize]) -> Result<Array> {
        ops::slice_strided(self, start, stop, strides, &OpOptions::new())
    }

    /// lax.dynamic_slice(x, start, sizes); a negative start counts from the end.
    pub fn dynamic_slice(&self, start: &[isize], sizes: &[usize]) -> Result<Array> {
        ops::dynamic_slice(self, start, sizes, &OpOptions::new())
    }
}

/// `x op y` for the array operands of the operators, borrowed or donated.
macro_rules! array_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<'b> $trait<&'b Array> for &Array {
            type Output = Result<Array>;
            fn $method(self, y: &'b Array) -> Result<Array> {
                ops::binary($op, self, y, &OpOptions::new())
            }
        }

        impl $trait<Array> for &Array {
            type Output = Result<Array>;
            fn $method(self, y: Array) -> Result<Array> {
                ops::binary($op, self, y, &OpOptions::new())
            }
        }

        impl<'b> $trait<&'b Array> for Array {
            type Output = Result<Array>;
            fn $method(self, y: &'b Array) -> Result<Array> {
                ops::binary($op, self, y, &OpOptions::new())
            }
        }

        impl $trait<Array> for Array {
            type Output = Result<Array>;
            fn $method(self, y: Array) -> Result<Array> {
                ops::binary($op, self, y, &OpOptions::new())
            }
        }
    };
}

/// `x op s` and `s op x` for the scalar types.
macro_rules! scalar_operator {
    ($trait:ident, $method:ident, $op:expr, $($s:ty),*) => {$(
        impl $trait<$s> for &Array {
            type Output = Result<Array>;
            fn $method(self, s: $s) -> Result<Array> {
                ops::binary_scalar($op, self, s.to_f64(), &OpOptions::new())
            }
        }

        impl $trait<$s> for Array {
            type Output = Result<Array>;
            fn $method(self, s: $s) -> Result<Array> {
                ops::binary_scalar($op, self, s.to_f64(), &OpOptions::new())
            }
        }

        impl $trait<&Array> for $s {
            type Output = Result<Array>;
            fn $method(self, x: &Array) -> Result<Array> {
                ops::scalar_binary($op, self.to_f64(), x, &OpOptions::new())
            }
        }

        impl $trait<Array> for $s {
            type Output = Result<Array>;
            fn $method(self, x: Array) -> Result<Array> {
                ops::scalar_binary($op, self.to_f64(), x, &OpOptions::new())
            }
        }
    )*};
}

array_operator!(Add, add, BinaryOp::Add);
array_operator!(Sub, sub, BinaryOp::Sub);
array_operator!(Mul, mul, BinaryOp::Mul);
array_operator!(Div, div, BinaryOp::Div);
scalar_operator!(Add, add, BinaryOp::Add, f64, i32);
scalar_operator!(Sub, sub, BinaryOp::Sub, f64, i32);
scalar_operator!(Mul, mul, BinaryOp::Mul, f64, i32);
scalar_operator!(Div, div, BinaryOp::Div, f64, i32);

impl Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        ops::unary(UnaryOp::Neg, self, &OpOptions::new())
    }
}

impl Neg for Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        ops::unary(UnaryOp::Neg, self, &OpOptions::new())
    }
}
