//! Persistent collectives: planned once, executed many times.
use std::sync::Mutex;

use crate::error::{c_string, check, Result};
use crate::{c_sizes, init_struct, out_handle, out_shape, out_value, ptr_or_null, sys, Array, DType, Sharding};

/// The collectives that can be planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollectiveKind {
    /// all-reduce (sum)
    Psum,
    /// all-reduce (mean)
    Pmean,
    /// all-reduce (max)
    Pmax,
    /// all-reduce (min)
    Pmin,
    /// all-gather
    AllGather,
    /// reduce-scatter
    PsumScatter,
    /// all-to-all
    AllToAll,
    /// collective permute
    Ppermute,
}

impl CollectiveKind {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_collective_kind {
        match self {
            CollectiveKind::Psum => sys::SPMD_COLLECTIVE_PSUM,
            CollectiveKind::Pmean => sys::SPMD_COLLECTIVE_PMEAN,
            CollectiveKind::Pmax => sys::SPMD_COLLECTIVE_PMAX,
            CollectiveKind::Pmin => sys::SPMD_COLLECTIVE_PMIN,
            CollectiveKind::AllGather => sys::SPMD_COLLECTIVE_ALL_GATHER,
            CollectiveKind::PsumScatter => sys::SPMD_COLLECTIVE_PSUM_SCATTER,
            CollectiveKind::AllToAll => sys::SPMD_COLLECTIVE_ALL_TO_ALL,
            CollectiveKind::Ppermute => sys::SPMD_COLLECTIVE_PPERMUTE,
        }
    }
}

/// The parameters of a collective; zero means "default".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectiveOptions {
    /// all_gather: axis; psum_scatter: scatter_dimension; all_to_all:
    /// split_axis. Negative counts from the end.
    pub axis: isize,
    /// all_to_all only.
    pub concat_axis: isize,
    /// all_gather, psum_scatter, all_to_all.
    pub tiled: bool,
    /// ppermute: (source, dest) pairs of axis indices.
    pub pairs: Vec<(usize, usize)>,
    /// Rendezvous timeout in milliseconds (0: the default).
    pub timeout_ms: i64,
}

/// A planned collective (`spmd_collective`): the jitted
/// shard_map(lambda x: jax.lax.psum(x, axes)) of JAX.
///
/// Thread rules: `Send + Sync`; the C API runs executions of one collective
/// one after another, which this type ensures with an internal mutex, so
/// [`Collective::execute`] takes `&self`. The output of
/// [`Collective::execute_into`] is written, so it is `&mut Array`.
pub struct Collective {
    ptr: *mut sys::spmd_collective,
    executions: Mutex<()>,
}

// SAFETY: spmd/spmd.h: handles are usable from any thread; executions are
// serialised by `executions`; destroy takes &mut self (Drop).
unsafe impl Send for Collective {}
unsafe impl Sync for Collective {}

impl Drop for Collective {
    fn drop(&mut self) {
        // SAFETY: we own the handle; no execution runs (we have &mut self).
        unsafe { sys::spmd_collective_destroy(self.ptr) }
    }
}

impl Collective {
    /// Plans `kind` over mesh axes `axes` ("x", "(x, y)", "()") of the mesh
    /// of `input_sharding`, for arrays of `dtype` and global `shape` laid out
    /// by it.
    pub fn new(
        input_sharding: &Sharding,
        kind: CollectiveKind,
        axes: &str,
        dtype: DType,
        shape: &[usize],
        options: &CollectiveOptions,
    ) -> Result<Collective> {
        let axes = c_string("Collective::new", axes)?;
        let shape = c_sizes("Collective::new: shape", shape)?;
        let flat: Vec<usize> = options.pairs.iter().flat_map(|&(s, d)| [s, d]).collect();
        let pairs = c_sizes("Collective::new: options.pairs", &flat)?;
        let mut o = init_struct(sys::spmd_collective_options_init)?;
        o.axis = options.axis as i64;
        o.concat_axis = options.concat_axis as i64;
        o.tiled = options.tiled as i32;
        o.npairs = options.pairs.len();
        o.pairs = ptr_or_null(&pairs);
        o.timeout_ms = options.timeout_ms;
        // SAFETY: pairs holds 2*npairs values (copied by the call); shape ndim.
        let ptr = out_handle(|out| unsafe {
            sys::spmd_collective_create(
                input_sharding.as_ptr(),
                kind.to_raw(),
                axes.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                &o,
                out,
            )
        })?;
        Ok(Collective { ptr, executions: Mutex::new(()) })
    }

    /// The raw handle, for calls through [`sys`](crate::sys).
    pub fn as_ptr(&self) -> *mut sys::spmd_collective {
        self.ptr
    }

    /// The output's sharding.
    pub fn output_sharding(&self) -> Result<Sharding> {
        // SAFETY: live handle; the new sharding handle is ours.
        Sharding::from_call(|out| unsafe { sys::spmd_collective_output_sharding(self.ptr, out) })
    }

    /// The output's element type.
    pub fn output_dtype(&self) -> Result<DType> {
        // SAFETY: live handle, valid out pointer.
        DType::from_raw_checked(out_value(|raw| unsafe { sys::spmd_collective_output_dtype(self.ptr, raw) })?)
    }

    /// The output's number of dimensions.
    pub fn output_ndim(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_collective_output_ndim(self.ptr, n) })
    }

    /// The output's global shape.
    pub fn output_shape(&self) -> Result<Vec<usize>> {
        // SAFETY: out_shape's buffer holds the capacity passed.
        out_shape(|cap, shape, ndim| unsafe { sys::spmd_collective_output_shape(self.ptr, cap, shape, ndim) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.executions.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs the collective on `input` into a new array.
    pub fn execute(&self, input: &Array) -> Result<Array> {
        let _one_at_a_time = self.lock();
        // SAFETY: live handles; executions serialised by the lock.
        Array::from_call(|out| unsafe { sys::spmd_collective_execute(self.ptr, input.as_ptr(), out) })
    }

    /// Runs the collective into an existing array of the output's sharding,
    /// dtype and shape, reusing its buffers.
    pub fn execute_into(&self, input: &Array, output: &mut Array) -> Result<()> {
        let _one_at_a_time = self.lock();
        // SAFETY: live handles; &mut output: nobody else reads or writes it.
        check(unsafe { sys::spmd_collective_execute_into(self.ptr, input.as_ptr(), output.as_ptr()) })
    }
}

impl std::fmt::Debug for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collective")
            .field("output_dtype", &self.output_dtype().ok())
            .field("output_shape", &self.output_shape().ok())
            .finish()
    }
}
