//! Sharded arrays.
use std::fmt;
use std::mem::size_of;
use std::os::raw::c_void;

use crate::error::{check, out_string, Error, Result};
use crate::{out_shape, out_value, ptr_or_null, sys, DType, Element, ShardInfo, Sharding, VisualizeOptions};

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
    pub fn from_host<T: Element>(sharding: &Sharding, shape: &[i64], data: &[T]) -> Result<Array> {
        Array::from_host_raw(sharding, T::DTYPE, shape, data.as_ptr() as *const c_void, std::mem::size_of_val(data))
    }

    /// [`Array::from_host`] for float16 or bfloat16 arrays, given as raw bits.
    pub fn from_host_bits(sharding: &Sharding, dtype: DType, shape: &[i64], bits: &[u16]) -> Result<Array> {
        if !dtype.is_half() {
            return Err(Error::invalid(format!("Array::from_host_bits: {dtype} is not float16 or bfloat16")));
        }
        Array::from_host_raw(sharding, dtype, shape, bits.as_ptr() as *const c_void, std::mem::size_of_val(bits))
    }

    fn from_host_raw(
        sharding: &Sharding,
        dtype: DType,
        shape: &[i64],
        data: *const c_void,
        nbytes: usize,
    ) -> Result<Array> {
        // SAFETY: data holds nbytes bytes; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_from_host(
                sharding.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(shape),
                data,
                nbytes,
                out,
            )
        })
    }

    /// An array of zeros.
    pub fn zeros(sharding: &Sharding, dtype: DType, shape: &[i64]) -> Result<Array> {
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_zeros(sharding.as_ptr(), dtype.to_raw(), shape.len(), ptr_or_null(shape), out)
        })
    }

    /// jnp.full: every element `value` converted to dtype.
    pub fn full(sharding: &Sharding, dtype: DType, shape: &[i64], value: f64) -> Result<Array> {
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_full(sharding.as_ptr(), dtype.to_raw(), shape.len(), ptr_or_null(shape), value, out)
        })
    }

    /// jnp.arange(start, start + n*step, step).reshape(shape).
    pub fn arange(sharding: &Sharding, dtype: DType, shape: &[i64], start: f64, step: f64) -> Result<Array> {
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_array_arange(sharding.as_ptr(), dtype.to_raw(), shape.len(), ptr_or_null(shape), start, step, out)
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
    pub fn shape(&self) -> Result<Vec<i64>> {
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
    pub fn device(&self) -> Result<i32> {
        // SAFETY: live handle, valid out pointer.
        out_value(|d| unsafe { sys::spmd_array_device(self.ptr, d) })
    }

    /// Waits for the pending work producing the array; its error, if any.
    pub fn block_until_ready(&self) -> Result<()> {
        // SAFETY: live handle; waiting reads the array only.
        check(unsafe { sys::spmd_array_block_until_ready(self.ptr) })
    }

    /// np.asarray(a): the global array, row-major. T must be the array's
    /// dtype.
    pub fn to_host<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype(T::DTYPE, "Array::to_host")?;
        self.read_all(T::valid_bytes)
    }

    /// [`Array::to_host`] for a float16 or bfloat16 array, as raw bits.
    pub fn to_host_bits(&self) -> Result<Vec<u16>> {
        self.expect_dtype_where(DType::is_half, "float16 or bfloat16", "Array::to_host_bits")?;
        self.read_all(|_| true)
    }

    /// The whole array in a new Vec<T>, T of the array's element size.
    fn read_all<T: Copy>(&self, valid: fn(&[u8]) -> bool) -> Result<Vec<T>> {
        // SAFETY: the buffer holds the nbytes passed.
        read_vec(self.size()?, valid, |data, nbytes| unsafe { sys::spmd_array_to_host(self.ptr, data, nbytes) })
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

    /// Number of shards, one per device of the sharding.
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
    pub fn shard_info_of_device(&self, device_id: i32) -> Result<ShardInfo> {
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
    /// sharding).
    pub fn reshard(&self, sharding: &Sharding) -> Result<Array> {
        // SAFETY: live handles, valid out pointer.
        Array::from_call(|out| unsafe { sys::spmd_array_reshard(self.ptr, sharding.as_ptr(), out) })
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
