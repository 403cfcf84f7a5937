//! DLPack: shards shared with other libraries without copies
//! (spmd/dlpack.h). A tensor crosses as a raw `*mut DLManagedTensor`, the
//! form every DLPack consumer takes.
use std::os::raw::c_void;

use crate::error::{check, Error, Result};
use crate::{c_device, c_sizes, ptr_or_null, sys, Array, DType, Sharding};

/// DLPack's `DLManagedTensor`, opaque: hand the pointer to another library,
/// or give it back with [`delete_dlpack`].
pub type DlpackTensor = *mut sys::DLManagedTensor;

impl Array {
    /// Shard `index`'s memory as a DLPack tensor, without a copy, once its
    /// pending writes are done (jax.dlpack). The tensor holds the memory
    /// until its deleter runs, even after the array is dropped; the
    /// consumer reads it only. Host memory (kDLCPU) on the cpu platform,
    /// the GPU's (kDLCUDA) on cuda. An out-of-range error past the last
    /// shard; unsupported for another process's shard or on the sim
    /// platform.
    pub fn shard_to_dlpack(&self, index: usize) -> Result<DlpackTensor> {
        let mut t: *mut sys::DLManagedTensor = std::ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_array_shard_to_dlpack(self.as_ptr(), index, &mut t) })?;
        Ok(t)
    }

    /// An array of global `shape` and `dtype` laid out by `sharding` whose
    /// blocks on this process's devices are DLPack tensors, adopted without
    /// a copy: `tensors[k]` is the block of device `devices[k]`, one per
    /// such device, each on that device's memory, of the dtype and the
    /// block's shape, compact row-major and ready. On success the array
    /// owns them and runs each deleter once its block is no longer used; on
    /// an error the caller keeps them all.
    ///
    /// # Safety
    /// Each tensor must be a live `DLManagedTensor` whose data stays valid
    /// and unwritten until the array runs its deleter.
    pub unsafe fn from_dlpack(
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        devices: &[usize],
        tensors: &[DlpackTensor],
    ) -> Result<Array> {
        if devices.len() != tensors.len() {
            return Err(Error::invalid(format!(
                "Array::from_dlpack: {} devices for {} tensors; one each",
                devices.len(),
                tensors.len()
            )));
        }
        let shape = c_sizes("Array::from_dlpack: shape", shape)?;
        let devices =
            devices.iter().map(|&d| c_device("Array::from_dlpack: devices", d)).collect::<Result<Vec<_>>>()?;
        // SAFETY: shape holds ndim sizes; devices and tensors count entries
        // (the caller vouches for the tensors).
        Array::from_call(|out| unsafe {
            sys::spmd_array_from_dlpack(
                sharding.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                tensors.len(),
                ptr_or_null(&devices),
                ptr_or_null(tensors),
                out,
            )
        })
    }
}

// DLPack's own layout of a DLManagedTensor (dlpack/dlpack.h, stable since
// 0.2), enough to reach its deleter.
#[repr(C)]
struct ManagedLayout {
    data: *mut c_void,
    device_type: i32,
    device_id: i32,
    ndim: i32,
    dtype: [u8; 4],
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut ManagedLayout)>,
}

/// Runs a DLPack tensor's deleter: for a tensor [`Array::shard_to_dlpack`]
/// gave that is not handed on after all, or one [`Array::from_dlpack`]
/// refused. A null tensor is ignored.
///
/// # Safety
/// `tensor` must be a live `DLManagedTensor` (or null), not used afterwards.
pub unsafe fn delete_dlpack(tensor: DlpackTensor) {
    let m = tensor as *mut ManagedLayout;
    if m.is_null() {
        return;
    }
    // SAFETY: the caller vouches for a live tensor of DLPack's layout.
    if let Some(deleter) = unsafe { (*m).deleter } {
        unsafe { deleter(m) }
    }
}
