//! Sharded arrays.
use std::fmt;
use std::mem::size_of;
use std::os::raw::c_void;
use std::path::Path;

use crate::error::{c_path, check, out_string, Error, Result};
use crate::{c_device, c_sizes, from_c_size, out_shape, out_value, ptr_or_null, sys};
use crate::{DType, Element, ShardInfo, Sharding, VisualizeOptions};

crate::handle!(
    /// A sharded array (`jax.Array`): a global shape and dtype laid out by a
    /// sharding, one buffer per device.
    ///
    /// Work may complete asynchronously; [`Array::block_until_ready`] and
    /// the copies to the host wait for it and report its errors. Thread
    /// rules: reads from any thread at once; [`Array::shard_write`] takes
    /// `&mut self`, so no read runs meanwhile.
    Array,
    sys::spmd_array,
    sys::spmd_array_destroy
);

/// spmd_array_from_host and spmd_array_from_process_local_data.
type FromHostEntry = unsafe extern "C" fn(
    *const sys::spmd_sharding,
    sys::spmd_dtype,
    usize,
    *const i64,
    *const c_void,
    usize,
    *mut *mut sys::spmd_array,
) -> sys::spmd_status;

/// A slice of host elements as its bytes.
fn as_bytes<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: the elements are plain values (f32, f64, integers, bool,
    // u16) without padding; the bytes live as long as the slice.
    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) }
}

/// Reads `n` elements of T through `call(buffer, nbytes)`, checking that
/// the bytes the library wrote are valid values of T.
fn read_vec<T: Copy>(
    n: usize,
    valid: fn(&[u8]) -> bool,
    call: impl FnOnce(*mut c_void, usize) -> sys::spmd_status,
) -> Result<Vec<T>> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    let nbytes = n * size_of::<T>();
    check(call(if n == 0 { std::ptr::null_mut() } else { v.as_mut_ptr() as *mut c_void }, nbytes))?;
    // SAFETY: on success the library wrote exactly nbytes into the buffer.
    unsafe {
        if !valid(std::slice::from_raw_parts(v.as_ptr() as *const u8, nbytes)) {
            return Err(Error::new(crate::Status::Internal, "the library wrote invalid bool bytes"));
        }
        v.set_len(n);
    }
    Ok(v)
}

impl Array {
    /// jax.device_put: copies a row-major host slice onto the devices of
    /// `sharding`. `data` must hold exactly prod(shape) elements.
    pub fn from_host<T: Element>(sharding: &Sharding, shape: &[usize], data: &[T]) -> Result<Array> {
        Array::from_host_raw(sys::spmd_array_from_host, sharding, T::DTYPE, shape, as_bytes(data))
    }

    /// [`Array::from_host`] for float16 or bfloat16 arrays, given as raw bits.
    pub fn from_host_bits(sharding: &Sharding, dtype: DType, shape: &[usize], bits: &[u16]) -> Result<Array> {
        if !dtype.is_half() {
            return Err(Error::invalid(format!("Array::from_host_bits: {dtype} is not float16 or bfloat16")));
        }
        Array::from_host_raw(sys::spmd_array_from_host, sharding, dtype, shape, as_bytes(bits))
    }

    /// jax.make_array_from_process_local_data: an array of global `shape`
    /// laid out by `sharding` from `data`, the part of it this process
    /// holds, row-major: the smallest box covering the blocks of this
    /// process's devices ([`Sharding::process_local_shape`] gives its shape;
    /// the whole array in a runtime of one process, or where `sharding`
    /// replicates it across processes). Each process passes its own part;
    /// nothing crosses processes.
    pub fn from_process_local_data<T: Element>(sharding: &Sharding, shape: &[usize], data: &[T]) -> Result<Array> {
        Array::from_host_raw(sys::spmd_array_from_process_local_data, sharding, T::DTYPE, shape, as_bytes(data))
    }

    /// [`Array::from_process_local_data`] for float16 or bfloat16 arrays,
    /// given as raw bits.
    pub fn from_process_local_data_bits(
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        bits: &[u16],
    ) -> Result<Array> {
        if !dtype.is_half() {
            return Err(Error::invalid(format!(
                "Array::from_process_local_data_bits: {dtype} is not float16 or bfloat16"
            )));
        }
        Array::from_host_raw(sys::spmd_array_from_process_local_data, sharding, dtype, shape, as_bytes(bits))
    }

    /// A new array from host bytes through `entry` (spmd_array_from_host
    /// or spmd_array_from_process_local_data, which take the same
    /// arguments).
    fn from_host_raw(
        entry: FromHostEntry,
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        data: &[u8],
    ) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: data holds its length in bytes; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            entry(
                sharding.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                data.as_ptr() as *const c_void,
                data.len(),
                out,
            )
        })
    }

    /// jax.make_array_from_single_device_arrays: an array of global `shape`
    /// and `dtype` laid out by `sharding` whose blocks on this process's
    /// devices are `arrays`, one per such device in any order, each on that
    /// one device (a [`Sharding::single_device`] array, or any array
    /// [`Array::device`] accepts) and of its block's shape and the dtype.
    /// They are copied; the caller keeps them. Each process passes its own
    /// devices' blocks; nothing crosses processes. An invalid-argument error
    /// for a wrong count, an array on several devices, on a device not this
    /// process's in the mesh or given twice, or of the wrong dtype or shape.
    pub fn from_single_device_arrays(
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        arrays: &[&Array],
    ) -> Result<Array> {
        let shape = c_sizes("Array::from_single_device_arrays: shape", shape)?;
        let ptrs: Vec<*const sys::spmd_array> = arrays.iter().map(|a| a.as_ptr() as *const _).collect();
        // SAFETY: shape holds ndim sizes; ptrs holds count live arrays.
        Array::from_call(|out| unsafe {
            sys::spmd_array_from_single_device_arrays(
                sharding.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                ptrs.len(),
                ptr_or_null(&ptrs),
                out,
            )
        })
    }

    /// An array of zeros.
    pub fn zeros(sharding: &Sharding, dtype: DType, shape: &[usize]) -> Result<Array> {
        let shape = c_sizes("Array::zeros: shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_zeros(sharding.as_ptr(), dtype.to_raw(), shape.len(), ptr_or_null(&shape), out)
        })
    }

    /// jnp.full: every element `value` converted to dtype.
    pub fn full(sharding: &Sharding, dtype: DType, shape: &[usize], value: f64) -> Result<Array> {
        let shape = c_sizes("Array::full: shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_full(sharding.as_ptr(), dtype.to_raw(), shape.len(), ptr_or_null(&shape), value, out)
        })
    }

    /// jnp.arange(start, start + n*step, step).reshape(shape).
    pub fn arange(sharding: &Sharding, dtype: DType, shape: &[usize], start: f64, step: f64) -> Result<Array> {
        let shape = c_sizes("Array::arange: shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_arange(
                sharding.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                start,
                step,
                out,
            )
        })
    }

    /// The element type.
    pub fn dtype(&self) -> Result<DType> {
        // SAFETY: live handle, valid out pointer.
        DType::from_raw_checked(out_value(|raw| unsafe { sys::spmd_array_dtype(self.ptr, raw) })?)
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_array_ndim(self.ptr, n) })
    }

    /// The global shape.
    pub fn shape(&self) -> Result<Vec<usize>> {
        // SAFETY: out_shape's buffer holds the capacity passed.
        out_shape(|cap, shape, ndim| unsafe { sys::spmd_array_shape(self.ptr, cap, shape, ndim) })
    }

    /// Number of elements, prod(shape).
    pub fn size(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        let n = out_value(|n| unsafe { sys::spmd_array_size(self.ptr, n) })?;
        Ok(n as usize)
    }

    /// Bytes of the global array.
    pub fn nbytes(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_array_nbytes(self.ptr, n) })
    }

    /// The array's sharding.
    pub fn sharding(&self) -> Result<Sharding> {
        // SAFETY: live handle; the new sharding handle is ours.
        Sharding::from_call(|out| unsafe { sys::spmd_array_sharding(self.ptr, out) })
    }

    /// a.device: the device of an array on one device.
    pub fn device(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        from_c_size(out_value(|d| unsafe { sys::spmd_array_device(self.ptr, d) })?)
    }

    /// Waits for the pending work producing the array; its error, if any.
    pub fn block_until_ready(&self) -> Result<()> {
        // SAFETY: live handle; waiting reads the array only.
        check(unsafe { sys::spmd_array_block_until_ready(self.ptr) })
    }

    /// np.asarray(a): the global array, row-major. T must be the array's
    /// dtype. Over several processes this process must hold every block
    /// ([`Array::is_fully_addressable`], or a replicated array);
    /// [`Array::process_allgather`] gathers the rest.
    pub fn to_host<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype(T::DTYPE, "Array::to_host")?;
        self.read_all(T::valid_bytes, sys::spmd_array_to_host)
    }

    /// [`Array::to_host`] for a float16 or bfloat16 array, as raw bits.
    pub fn to_host_bits(&self) -> Result<Vec<u16>> {
        self.expect_dtype_where(DType::is_half, "float16 or bfloat16", "Array::to_host_bits")?;
        self.read_all(|_| true, sys::spmd_array_to_host)
    }

    /// jax.experimental.multihost_utils.process_allgather(a, tiled=True):
    /// the global array, row-major, in every process, the blocks other
    /// processes hold brought here. T must be the array's dtype. Every
    /// process of the runtime must call it, in the same order as its other
    /// calls across processes; in a runtime of one process it is
    /// [`Array::to_host`]. [`crate::Status::Timeout`] when a process does
    /// not take part in time.
    pub fn process_allgather<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype(T::DTYPE, "Array::process_allgather")?;
        self.read_all(T::valid_bytes, sys::spmd_array_process_allgather)
    }

    /// [`Array::process_allgather`] for a float16 or bfloat16 array, as raw
    /// bits.
    pub fn process_allgather_bits(&self) -> Result<Vec<u16>> {
        self.expect_dtype_where(DType::is_half, "float16 or bfloat16", "Array::process_allgather_bits")?;
        self.read_all(|_| true, sys::spmd_array_process_allgather)
    }

    /// jax.Array.is_fully_addressable: whether this process holds every
    /// shard (always in a runtime of one process). Only such an array, or a
    /// replicated one, can be read with [`Array::to_host`].
    pub fn is_fully_addressable(&self) -> Result<bool> {
        // SAFETY: live handle, valid out pointer.
        Ok(out_value(|r| unsafe { sys::spmd_array_is_fully_addressable(self.ptr, r) })? != 0)
    }

    /// The whole array in a new Vec<T>, T of the array's element size,
    /// copied by `copy` (spmd_array_to_host or spmd_array_process_allgather).
    fn read_all<T: Copy>(
        &self,
        valid: fn(&[u8]) -> bool,
        copy: unsafe extern "C" fn(*const sys::spmd_array, *mut c_void, usize) -> sys::spmd_status,
    ) -> Result<Vec<T>> {
        // SAFETY: live handle; the buffer holds the nbytes passed.
        read_vec(self.size()?, valid, |data, nbytes| unsafe { copy(self.ptr, data, nbytes) })
    }

    fn expect_dtype(&self, want: DType, what: &str) -> Result<()> {
        self.expect_dtype_where(|d| d == want, want.name(), what)
    }

    /// Refuses an array whose dtype `accept` refuses, naming `want`.
    fn expect_dtype_where(&self, accept: impl Fn(DType) -> bool, want: &str, what: &str) -> Result<()> {
        let dtype = self.dtype()?;
        if !accept(dtype) {
            return Err(Error::invalid(format!("{what}: the array holds {dtype}, not {want}")));
        }
        Ok(())
    }

    /// Number of shards, one per device of the sharding (over several
    /// processes every shard, those of other processes' devices described
    /// but not readable here).
    pub fn shard_count(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_array_shard_count(self.ptr, n) })
    }

    /// Where shard `index` lives.
    pub fn shard_info(&self, index: usize) -> Result<ShardInfo> {
        // SAFETY: out is initialised by fill.
        ShardInfo::fill(|out| unsafe { sys::spmd_array_shard_info(self.ptr, index, out) })
    }

    /// The shard on device `device_id`.
    pub fn shard_info_of_device(&self, device_id: usize) -> Result<ShardInfo> {
        let device_id = c_device("Array::shard_info_of_device: device_id", device_id)?;
        // SAFETY: out is initialised by fill.
        ShardInfo::fill(|out| unsafe { sys::spmd_array_shard_info_of_device(self.ptr, device_id, out) })
    }

    /// Every shard, in mesh device order (a.addressable_shards).
    pub fn shards(&self) -> Result<Vec<ShardInfo>> {
        (0..self.shard_count()?).map(|i| self.shard_info(i)).collect()
    }

    /// Copies shard `index` (row-major, local shape) to the host.
    pub fn shard_read<T: Element>(&self, index: usize) -> Result<Vec<T>> {
        self.expect_dtype(T::DTYPE, "Array::shard_read")?;
        let n = self.shard_info(index)?.len();
        // SAFETY: the buffer holds the nbytes passed.
        read_vec(n, T::valid_bytes, |data, nbytes| unsafe { sys::spmd_array_shard_read(self.ptr, index, data, nbytes) })
    }

    /// Overwrites shard `index` from `data` (row-major in its local shape).
    /// Only that device's copy changes. `&mut self`: nothing reads the
    /// array meanwhile.
    pub fn shard_write<T: Element>(&mut self, index: usize, data: &[T]) -> Result<()> {
        self.expect_dtype(T::DTYPE, "Array::shard_write")?;
        // SAFETY: data holds the nbytes passed; &mut self excludes readers.
        check(unsafe {
            sys::spmd_array_shard_write(self.ptr, index, data.as_ptr() as *const c_void, std::mem::size_of_val(data))
        })
    }

    /// The same values laid out by `sharding` (jax.device_put to a new
    /// sharding). On a value of a program being recorded
    /// ([`Program::record`](crate::Program::record)) it records a layout
    /// constraint (jax.lax.with_sharding_constraint).
    pub fn reshard(&self, sharding: &Sharding) -> Result<Array> {
        // SAFETY: live handles, valid out pointer.
        Array::from_call(|out| unsafe { sys::spmd_array_reshard(self.ptr, sharding.as_ptr(), out) })
    }

    /// Saves the array to the directory `dir` as a checkpoint, as Orbax
    /// checkpoints a jax.Array (`ocp.StandardCheckpointer().save(dir, a)`),
    /// in libspmd's own layout: each process writes the blocks of its
    /// devices, one file per block, and process 0 an index of them, so that
    /// [`Array::load`] restores it under any sharding, on any mesh and
    /// number of processes. The directory is made if missing.
    /// [`crate::Status::InvalidArgument`] when it already holds a
    /// checkpoint, or when a file cannot be made or written (the message
    /// names the path and the system's reason). Every process of the
    /// runtime calls it with the same directory, on a file system they
    /// share; it waits for pending work and returns once the whole
    /// checkpoint is written. [`crate::Status::Timeout`] when a process does
    /// not take part in time.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = c_path("Array::save", dir.as_ref())?;
        // SAFETY: live handle; dir is a NUL-terminated string alive for the call.
        check(unsafe { sys::spmd_array_save(self.ptr, dir.as_ptr()) })
    }

    /// Restores the array [`Array::save`] wrote to the directory `dir`,
    /// laid out by `sharding` (Orbax's restore of a jax.Array with
    /// `ocp.ArrayRestoreArgs(sharding=...)`): its dtype and shape are the
    /// saved ones, so the element type is known at run time
    /// ([`Array::dtype`]); each process reads only the parts of the saved
    /// blocks its own devices need. [`crate::Status::InvalidArgument`] for a
    /// directory without a checkpoint, a damaged index or block file (named
    /// in the message), or a sharding whose spec does not suit the saved
    /// rank.
    pub fn load(sharding: &Sharding, dir: impl AsRef<Path>) -> Result<Array> {
        let dir = c_path("Array::load", dir.as_ref())?;
        // SAFETY: live handle; dir is a NUL-terminated string alive for the
        // call; valid out pointer.
        Array::from_call(|out| unsafe { sys::spmd_array_load(sharding.as_ptr(), dir.as_ptr(), out) })
    }

    /// JAX's repr: "Array([ 28.,  92., 156.], dtype=float32)".
    pub fn repr(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_array_repr(self.ptr, out) })
    }

    /// str(a), what print(a) shows: "[[0. 1.]\n [2. 3.]]".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_array_str(self.ptr, out) })
    }

    /// The picture of the array's sharding (jax.debug.visualize_array_sharding).
    pub fn visualize(&self) -> Result<String> {
        self.visualize_with(&VisualizeOptions::default())
    }

    /// [`Array::visualize`] with options.
    pub fn visualize_with(&self, options: &VisualizeOptions) -> Result<String> {
        let o = options.to_sys()?;
        // SAFETY: live handle, valid options and out pointer.
        out_string(|out| unsafe { sys::spmd_array_visualize(self.ptr, &o, out) })
    }
}

/// str(a), as print(a) in Python.
impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text().map_err(|_| fmt::Error)?)
    }
}

/// repr(a).
impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.repr() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "Array(<{e}>)"),
        }
    }
}
