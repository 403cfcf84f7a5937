//! Shardings: how an array's elements are laid out over devices.
use crate::error::{c_string, check, out_string, Error, Result};
use crate::{
    c_device, c_sizes, from_c_size, from_c_sizes, init_struct, out_value, ptr_or_null, sys, Mesh, Runtime, Spec,
};

crate::handle!(
    /// A sharding (`spmd_sharding`): `NamedSharding(mesh, spec)` or
    /// `SingleDeviceSharding(device)`. It keeps its mesh alive.
    Sharding,
    sys::spmd_sharding,
    sys::spmd_sharding_destroy
);

/// The kinds of sharding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardingKind {
    /// NamedSharding(mesh, spec).
    Named,
    /// SingleDeviceSharding(device).
    SingleDevice,
}

/// Where one shard of a global array lives (jax's Shard): `[start, stop)`
/// per dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    /// Global id of the device holding the shard.
    pub device: usize,
    /// Counts the devices holding the same block, 0 for the first.
    pub replica_id: usize,
    /// First index per dimension.
    pub start: Vec<usize>,
    /// One past the last index per dimension.
    pub stop: Vec<usize>,
    /// stop - start per dimension.
    pub local_shape: Vec<usize>,
}

impl ShardInfo {
    /// Runs a call that fills a `spmd_shard_info` made by `spmd_shard_info_init`.
    pub(crate) fn fill(call: impl FnOnce(*mut sys::spmd_shard_info) -> sys::spmd_status) -> Result<ShardInfo> {
        let mut info = init_struct(sys::spmd_shard_info_init)?;
        check(call(&mut info))?;
        let n = info.ndim.min(crate::MAX_NDIM);
        Ok(ShardInfo {
            device: from_c_size(info.device)?,
            replica_id: from_c_size(info.replica_id)?,
            start: from_c_sizes(&info.start[..n])?,
            stop: from_c_sizes(&info.stop[..n])?,
            local_shape: from_c_sizes(&info.local_shape[..n])?,
        })
    }

    /// Number of elements of the shard.
    pub fn len(&self) -> usize {
        self.local_shape.iter().product()
    }

    /// Whether the shard holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Options of the sharding pictures; zero means "default".
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VisualizeOptions {
    /// `+-|` instead of box drawing characters.
    pub ascii: bool,
    /// Console width (0 = 80, as JAX).
    pub max_width: i32,
    /// Narrowest block (0 = 9, as JAX).
    pub min_width: i32,
    /// Picture scale (0 = 1.0, as JAX).
    pub scale: f64,
}

impl VisualizeOptions {
    pub(crate) fn to_sys(self) -> Result<sys::spmd_visualize_options> {
        let mut o = init_struct(sys::spmd_visualize_options_init)?;
        o.ascii = self.ascii as i32;
        o.max_width = self.max_width;
        o.min_width = self.min_width;
        o.scale = self.scale;
        Ok(o)
    }
}

impl Sharding {
    /// NamedSharding(mesh, spec).
    pub fn named(mesh: &Mesh, spec: &Spec) -> Result<Sharding> {
        // SAFETY: live handles, valid out pointer.
        Sharding::from_call(|out| unsafe { sys::spmd_sharding_named(mesh.as_ptr(), spec.as_ptr(), out) })
    }

    /// NamedSharding(mesh, spec) with the spec as text ("x", "P('x', None)").
    pub fn named_text(mesh: &Mesh, spec: &str) -> Result<Sharding> {
        let c = c_string("Sharding::named_text", spec)?;
        // SAFETY: live handle, valid string and out pointer.
        Sharding::from_call(|out| unsafe { sys::spmd_sharding_named_text(mesh.as_ptr(), c.as_ptr(), out) })
    }

    /// NamedSharding(mesh, P()): every device holds the whole array.
    pub fn replicated(mesh: &Mesh) -> Result<Sharding> {
        // SAFETY: live handle, valid out pointer.
        Sharding::from_call(|out| unsafe { sys::spmd_sharding_replicated(mesh.as_ptr(), out) })
    }

    /// SingleDeviceSharding(device).
    pub fn single_device(runtime: &Runtime, device_id: usize) -> Result<Sharding> {
        let device_id = c_device("Sharding::single_device: device_id", device_id)?;
        // SAFETY: live handle, valid out pointer.
        Sharding::from_call(|out| unsafe { sys::spmd_sharding_single_device(runtime.as_ptr(), device_id, out) })
    }

    /// The kind of sharding.
    pub fn kind(&self) -> Result<ShardingKind> {
        // SAFETY: live handle, valid out pointer.
        match out_value(|raw| unsafe { sys::spmd_sharding_get_kind(self.ptr, raw) })? {
            sys::SPMD_SHARDING_NAMED => Ok(ShardingKind::Named),
            sys::SPMD_SHARDING_SINGLE_DEVICE => Ok(ShardingKind::SingleDevice),
            raw => Err(Error::new(crate::Status::Internal, format!("unknown sharding kind {raw}"))),
        }
    }

    /// The mesh (a one-device mesh for a single-device sharding).
    pub fn mesh(&self) -> Result<Mesh> {
        // SAFETY: live handle; the new mesh handle is ours.
        Mesh::from_call(|out| unsafe { sys::spmd_sharding_mesh(self.ptr, out) })
    }

    /// A copy of the spec (P() for a single-device sharding).
    pub fn spec(&self) -> Result<Spec> {
        // SAFETY: live handle; the new spec handle is ours.
        Spec::from_call(|out| unsafe { sys::spmd_sharding_spec(self.ptr, out) })
    }

    /// Number of devices that hold a shard.
    pub fn device_count(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_sharding_device_count(self.ptr, n) })
    }

    /// Whether two shardings place every element on the same devices (JAX's ==).
    pub fn equals(&self, other: &Sharding) -> Result<bool> {
        // SAFETY: live handles, valid out pointer.
        Ok(out_value(|eq| unsafe { sys::spmd_sharding_equal(self.ptr, other.ptr, eq) })? != 0)
    }

    /// Whether every device holds the whole array.
    pub fn is_fully_replicated(&self) -> Result<bool> {
        // SAFETY: live handle, valid out pointer.
        Ok(out_value(|r| unsafe { sys::spmd_sharding_is_fully_replicated(self.ptr, r) })? != 0)
    }

    /// JAX's str: "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',), memory_kind=device)".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_sharding_to_string(self.ptr, out) })
    }

    /// Shard `index` (in mesh device order) of an array of global `shape`.
    pub fn shard_info(&self, shape: &[usize], index: usize) -> Result<ShardInfo> {
        let shape = c_sizes("Sharding::shard_info: shape", shape)?;
        // SAFETY: shape holds ndim sizes; out is initialised by fill.
        ShardInfo::fill(|out| unsafe {
            sys::spmd_sharding_shard_info(self.ptr, shape.len(), ptr_or_null(&shape), index, out)
        })
    }

    /// The shape of this process's part of an array of global `shape`, what
    /// [`crate::Array::from_process_local_data`] takes: the smallest box covering
    /// the blocks of this process's devices (`shape` itself in a runtime of
    /// one process).
    pub fn process_local_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        let shape = c_sizes("Sharding::process_local_shape: shape", shape)?;
        let mut local = vec![0i64; shape.len()];
        // SAFETY: shape holds ndim sizes and local room for as many.
        check(unsafe {
            sys::spmd_array_process_local_shape(self.ptr, shape.len(), ptr_or_null(&shape), local.as_mut_ptr())
        })?;
        from_c_sizes(&local)
    }

    /// The shard on device `device_id` of an array of global `shape`.
    pub fn shard_info_of_device(&self, shape: &[usize], device_id: usize) -> Result<ShardInfo> {
        let shape = c_sizes("Sharding::shard_info_of_device: shape", shape)?;
        let device_id = c_device("Sharding::shard_info_of_device: device_id", device_id)?;
        // SAFETY: shape holds ndim sizes; out is initialised by fill.
        ShardInfo::fill(|out| unsafe {
            sys::spmd_sharding_shard_info_of_device(self.ptr, shape.len(), ptr_or_null(&shape), device_id, out)
        })
    }

    /// The picture of how an array of `shape` (1 or 2 dimensions) is laid out
    /// (jax.debug.visualize_array_sharding), ending with a newline.
    pub fn visualize(&self, shape: &[usize], options: &VisualizeOptions) -> Result<String> {
        let shape = c_sizes("Sharding::visualize: shape", shape)?;
        let o = options.to_sys()?;
        // SAFETY: shape holds ndim sizes; valid options and out pointer.
        out_string(|out| unsafe { sys::spmd_sharding_visualize(self.ptr, shape.len(), ptr_or_null(&shape), &o, out) })
    }
}

crate::text_and_equality!(Sharding);
