//! JAX's SPMD sharding model in Rust, over libspmd.
//!
//! A [`Runtime`] holds N devices (virtual CPU devices by default); a [`Mesh`]
//! arranges them in a grid with named axes; a [`Spec`] (a PartitionSpec)
//! says which mesh axes split each array dimension; a [`Sharding`] puts the
//! two together; an [`Array`] is a global array laid out by a sharding, one
//! block per device. Global ops compute on sharded arrays as `jax.jit`
//! does: arrays' methods and operators (`a.sin()`, `a.sum(&[1])`,
//! `(&a + &b)?`, see [`Array::sum`] and the [`Array`] page) or the free
//! functions of [`ops`]; [`Mesh::shard_map`] runs a closure on every device
//! at once with collectives ([`ShardContext::psum`] and co.); [`Collective`]
//! plans a collective once and runs it many times; [`Key`] makes JAX's
//! random numbers; [`Program`] (experimental) records a closure of ops
//! once and runs it many times, as `jax.jit`.
//!
//! ```no_run
//! use spmd::{Array, DType, Mesh, Runtime, Sharding};
//!
//! fn main() -> spmd::Result<()> {
//!     let rt = Runtime::builder().cpu_devices(4).build()?;
//!     let mesh = Mesh::new(&rt, &[4], &["x"])?;
//!     let rows = Sharding::named_text(&mesh, "x")?;
//!     let a = Array::arange(&rows, DType::F32, &[8, 2], 0.0, 1.0)?;
//!     println!("{}", a.visualize()?);
//!     let sums = (2.0 * &a)?.sum(&[0])?; // (2 * a).sum(axis=0)
//!     println!("{}", sums.repr()?);
//!     Ok(())
//! }
//! ```
//!
//! Operators return [`Result`] (an op can fail, and this library does not
//! panic for it), so each ends in `?`; shapes, device ids and indexes are
//! `usize`, axes (negative from the end) `isize`.
//!
//! # Errors
//!
//! Every fallible call returns [`Result`]; an [`Error`] carries the
//! [`Status`] and the library's message, read right after the failing call
//! on the thread that made it.
//!
//! # Ownership and threads
//!
//! Each handle type owns one libspmd handle and destroys it in `Drop`; a
//! use after drop does not compile:
//!
//! ```compile_fail
//! let rt = spmd::Runtime::new().unwrap();
//! let mesh = spmd::Mesh::new(&rt, &[2], &["x"]).unwrap();
//! drop(mesh);
//! let _ = mesh.size(); // error[E0382]: borrow of moved value: `mesh`
//! ```
//!
//! Send and Sync follow `spmd/spmd.h`: handles are immutable once made and
//! usable from any thread at once, so [`Runtime`], [`Mesh`], [`Spec`],
//! [`Sharding`], [`Array`] and [`Collective`] are `Send + Sync`. The
//! exceptions are in the types: [`Spec::append`] and [`Array::shard_write`]
//! take `&mut self` (no reader meanwhile), a donating op takes its operand
//! by value, [`Collective::execute_into`] takes its output as `&mut Array`,
//! executions of one [`Collective`] are serialised by an internal mutex,
//! and a [`ShardContext`] and its [`Block`]s are neither `Send` nor `Sync`
//! (they live on their callback's thread, for the duration of the call).

#![warn(missing_docs)]

pub use spmd_sys as sys;

mod array;
mod array_ops;
mod collective;
mod dlpack;
mod dtype;
mod error;
mod mesh;
pub mod ops;
mod program;
mod random;
mod runtime;
mod shard_map;
mod sharding;
mod spec;

pub use array::Array;
pub use array_ops::{Rhs, Scalar};
pub use collective::{Collective, CollectiveKind, CollectiveOptions};
pub use dlpack::{delete_dlpack, DlpackTensor};
pub use dtype::{DType, Element};
pub use error::{clear_error, last_error, Error, Result, Status};
pub use mesh::Mesh;
pub use ops::{BinaryOp, DotDims, OpOptions, Operand, ReduceOp, UnaryOp};
pub use program::{InputSpec, Program, RecordOptions};
pub use random::Key;
pub use runtime::{DeviceInfo, Distributed, MemoryKind, Platform, Runtime, RuntimeBuilder};
pub use shard_map::{Block, IntoSpec, MeshRef, PrintFn, ShardContext, ShardMapOptions};
pub use sharding::{ShardInfo, Sharding, ShardingKind, VisualizeOptions};
pub use spec::Spec;

use error::check;

/// jax.debug.print inside a shard_map closure: formats its arguments as
/// `format!` does and hands the text to [`ShardContext::print`] with the
/// device's id, returning its `Result`.
///
/// ```no_run
/// # fn main() -> spmd::Result<()> {
/// # let rt = spmd::Runtime::new()?;
/// # let mesh = spmd::Mesh::new(&rt, &[2], &["x"])?;
/// # let x = spmd::Array::zeros(&spmd::Sharding::named_text(&mesh, "x")?, spmd::DType::F32, &[4])?;
/// mesh.shard_map(&[&x], &["x"], &["x"], |ctx| {
///     let block = ctx.input(0)?;
///     spmd::debug_print!(ctx, "device {}: shape {:?}", ctx.device_id()?, block.shape())?;
///     ctx.set_output(0, &block)
/// })?;
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! debug_print {
    ($ctx:expr, $($arg:tt)+) => {
        $ctx.printf(::std::format_args!($($arg)+))
    };
}

/// Most dimensions an array, a spec or a mesh may have.
pub const MAX_NDIM: usize = sys::SPMD_MAX_NDIM as usize;

/// The number of libspmd handles live in this process, of every kind: the
/// count before and after a piece of work tells whether it leaked one.
/// Handles other threads make meanwhile count too.
pub fn live_handles() -> Result<usize> {
    // SAFETY: a valid out pointer.
    out_value(|n| unsafe { sys::spmd_live_handles(n) })
}

/// The loaded library's version, major * 10000 + minor * 100 + patch.
pub fn version() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::spmd_version() }
}

/// The loaded library's version as text ("1.4.0").
pub fn version_string() -> String {
    // SAFETY: a static string, never NULL.
    unsafe { error::from_c(sys::spmd_version_string()) }
}

/// A handle type: one owned libspmd handle, destroyed in Drop.
macro_rules! handle {
    ($(#[$meta:meta])* $name:ident, $raw:ty, $destroy:path) => {
        $(#[$meta])*
        pub struct $name {
            ptr: *mut $raw,
        }

        // SAFETY: spmd/spmd.h: handles are immutable once made and usable
        // from any thread at the same time; the calls that change one take
        // &mut self.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: we own the handle; nothing uses it after this.
                unsafe { $destroy(self.ptr) }
            }
        }

        impl $name {
            /// Takes ownership of a raw handle (from the sys layer).
            ///
            /// # Safety
            /// `ptr` is a live handle of this kind that the caller owns and
            /// hands over; it is destroyed when the value drops.
            pub unsafe fn from_raw(ptr: *mut $raw) -> $name {
                $name { ptr }
            }

            /// The raw handle, for calls through [`sys`](crate::sys). It
            /// stays owned by `self`.
            pub fn as_ptr(&self) -> *mut $raw {
                self.ptr
            }

            /// Runs a call that makes a new handle of this kind through its
            /// last argument, and takes ownership of it.
            pub(crate) fn from_call(
                call: impl FnOnce(*mut *mut $raw) -> crate::sys::spmd_status,
            ) -> crate::Result<$name> {
                crate::out_handle(call).map(|ptr| $name { ptr })
            }
        }
    };
}
pub(crate) use handle;

/// For a handle type with `to_text` and `equals`: Display and Debug print
/// the library's text (JAX's str), and == is `equals` (false when the call
/// fails).
macro_rules! text_and_equality {
    ($name:ident) => {
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.to_text().map_err(|_| std::fmt::Error)?)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(self, f)
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &$name) -> bool {
                self.equals(other).unwrap_or(false)
            }
        }
    };
}
pub(crate) use text_and_equality;

/// A pointer to a slice's data, NULL for an empty slice (the C API's "may be
/// NULL when the count is 0").
pub(crate) fn ptr_or_null<T>(s: &[T]) -> *const T {
    if s.is_empty() {
        std::ptr::null()
    } else {
        s.as_ptr()
    }
}

/// [`ptr_or_null`] for a slice the call writes.
pub(crate) fn mut_ptr_or_null<T>(s: &mut [T]) -> *mut T {
    if s.is_empty() {
        std::ptr::null_mut()
    } else {
        s.as_mut_ptr()
    }
}

/// Runs a call that returns a new handle through its last argument.
pub(crate) fn out_handle<T>(call: impl FnOnce(*mut *mut T) -> sys::spmd_status) -> Result<*mut T> {
    let mut p: *mut T = std::ptr::null_mut();
    check(call(&mut p))?;
    Ok(p)
}

/// Runs a call that returns a number (a count, an id, a flag, an enum value)
/// through its last argument.
pub(crate) fn out_value<T: Default>(call: impl FnOnce(*mut T) -> sys::spmd_status) -> Result<T> {
    let mut v = T::default();
    check(call(&mut v))?;
    Ok(v)
}

/// Runs a call that writes a shape (or coordinates) of at most
/// [`MAX_NDIM`] values: `call(capacity, values, &mut ndim)`.
pub(crate) fn out_shape(call: impl FnOnce(usize, *mut i64, *mut usize) -> sys::spmd_status) -> Result<Vec<usize>> {
    let mut shape = [0i64; MAX_NDIM];
    let mut ndim = 0usize;
    check(call(MAX_NDIM, shape.as_mut_ptr(), &mut ndim))?;
    from_c_sizes(&shape[..ndim.min(MAX_NDIM)])
}

/// Sizes, indexes or coordinates as the C API's `int64_t`s; `what` names
/// the argument in the error for a value past `i64::MAX`.
pub(crate) fn c_sizes(what: &str, values: &[usize]) -> Result<Vec<i64>> {
    values.iter().map(|&v| c_size(what, v)).collect()
}

/// One size or index as an `int64_t`.
pub(crate) fn c_size(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::invalid(format!("{what}: {value} does not fit in an int64_t")))
}

/// Axes (negative counting from the end) as `int64_t`s: always exact.
pub(crate) fn c_axes(axes: &[isize]) -> Vec<i64> {
    axes.iter().map(|&a| a as i64).collect()
}

/// A device id as the C API's `int`.
pub(crate) fn c_device(what: &str, device: usize) -> Result<i32> {
    i32::try_from(device).map_err(|_| Error::invalid(format!("{what}: device id {device} does not fit in an int")))
}

/// Sizes, indexes or coordinates the library wrote, which are never
/// negative.
pub(crate) fn from_c_sizes(values: &[i64]) -> Result<Vec<usize>> {
    values.iter().map(|&v| from_c_size(v)).collect()
}

/// One size, index or device id the library gave.
pub(crate) fn from_c_size<T: TryInto<usize> + Copy + std::fmt::Display>(value: T) -> Result<usize> {
    value.try_into().map_err(|_| Error::new(Status::Internal, format!("the library gave {value} for a size or index")))
}

/// A C struct with its defaults, filled by its `spmd_xxx_init` function.
/// `T` is one of the sys structs, for which all-zero bytes are a valid value
/// (integers, pointers and optional function pointers only).
pub(crate) fn init_struct<T>(init: unsafe extern "C" fn(*mut T, usize) -> sys::spmd_status) -> Result<T> {
    let mut s = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: zeroed is a valid T (above); init writes at most size_of::<T>() bytes.
    unsafe {
        check(init(s.as_mut_ptr(), std::mem::size_of::<T>()))?;
        Ok(s.assume_init())
    }
}

/// C copies of Rust strings and the array of pointers to them, for the
/// `const char *const *` arguments; `what` names the caller in the error for
/// a string with a NUL inside.
pub(crate) struct CStrings {
    _owned: Vec<std::ffi::CString>,
    ptrs: Vec<*const std::os::raw::c_char>,
}

impl CStrings {
    pub(crate) fn new(what: &str, strings: &[&str]) -> Result<CStrings> {
        let owned = strings.iter().map(|s| error::c_string(what, s)).collect::<Result<Vec<_>>>()?;
        // The pointers stay valid when `owned` moves: they point at each
        // CString's own heap buffer.
        let ptrs = owned.iter().map(|s| s.as_ptr()).collect();
        Ok(CStrings { _owned: owned, ptrs })
    }

    /// The pointers, one per string.
    pub(crate) fn ptrs(&self) -> &[*const std::os::raw::c_char] {
        &self.ptrs
    }
}
