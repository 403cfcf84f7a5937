//! Device meshes: devices arranged in a grid with named axes.
use std::fmt;
use std::os::raw::c_char;

use crate::error::{c_string, check, from_c, out_string, Error, Result};
use crate::{out_handle, ptr_or_null, sys, Runtime, MAX_NDIM};

crate::handle!(
    /// A device mesh (`jax.sharding.Mesh`): devices of one runtime in a grid
    /// with named axes. It keeps its runtime alive.
    Mesh,
    sys::spmd_mesh,
    sys::spmd_mesh_destroy
);

impl Mesh {
    /// `jax.make_mesh(shape, axis_names)`: devices 0, 1, ... in row-major
    /// order.
    pub fn new(runtime: &Runtime, shape: &[i64], axis_names: &[&str]) -> Result<Mesh> {
        Mesh::create(runtime, shape, axis_names, None)
    }

    /// A mesh over the given devices, `prod(shape)` distinct ids in row-major
    /// mesh order.
    pub fn with_devices(runtime: &Runtime, shape: &[i64], axis_names: &[&str], devices: &[i32]) -> Result<Mesh> {
        Mesh::create(runtime, shape, axis_names, Some(devices))
    }

    fn create(runtime: &Runtime, shape: &[i64], axis_names: &[&str], devices: Option<&[i32]>) -> Result<Mesh> {
        if shape.len() != axis_names.len() {
            return Err(Error::invalid(format!(
                "Mesh::new: {} axis sizes but {} axis names",
                shape.len(),
                axis_names.len()
            )));
        }
        if let Some(devices) = devices {
            let want: i64 = shape.iter().product();
            if devices.len() as i64 != want {
                return Err(Error::invalid(format!(
                    "Mesh::with_devices: a mesh of shape {shape:?} takes {want} device ids, not {}",
                    devices.len()
                )));
            }
        }
        let names = axis_names.iter().map(|n| c_string("Mesh::new", n)).collect::<Result<Vec<_>>>()?;
        let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let ids = devices.map_or(std::ptr::null(), |d| d.as_ptr());
        // SAFETY: shape and ptrs hold ndim entries, ids prod(shape) or NULL.
        let ptr = out_handle(|out| unsafe {
            sys::spmd_mesh_create(runtime.as_ptr(), shape.len(), ptr_or_null(shape), ptr_or_null(&ptrs), ids, out)
        })?;
        Ok(Mesh { ptr })
    }

    /// Number of axes.
    pub fn ndim(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_mesh_ndim(self.ptr, &mut n) })?;
        Ok(n)
    }

    /// Number of devices, prod(shape).
    pub fn size(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_mesh_size(self.ptr, &mut n) })?;
        Ok(n)
    }

    /// Name of axis `axis`.
    pub fn axis_name(&self, axis: usize) -> Result<String> {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: the name is borrowed from the mesh and copied at once.
        check(unsafe { sys::spmd_mesh_axis_name(self.ptr, axis, &mut p) })?;
        Ok(unsafe { from_c(p) })
    }

    /// The axis names, in order.
    pub fn axis_names(&self) -> Result<Vec<String>> {
        (0..self.ndim()?).map(|a| self.axis_name(a)).collect()
    }

    /// Size of axis `axis`.
    pub fn axis_size(&self, axis: usize) -> Result<i64> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_mesh_axis_size(self.ptr, axis, &mut n) })?;
        Ok(n)
    }

    /// The axis sizes, in order.
    pub fn shape(&self) -> Result<Vec<i64>> {
        (0..self.ndim()?).map(|a| self.axis_size(a)).collect()
    }

    /// Index of the axis called `name`.
    pub fn axis_index(&self, name: &str) -> Result<usize> {
        let c = c_string("Mesh::axis_index", name)?;
        let mut i = 0;
        // SAFETY: live handle, valid string and out pointer.
        check(unsafe { sys::spmd_mesh_axis_index(self.ptr, c.as_ptr(), &mut i) })?;
        Ok(i)
    }

    /// The device at mesh coordinates `coords` (one per axis).
    pub fn device_at(&self, coords: &[i64]) -> Result<i32> {
        let mut d = 0;
        // SAFETY: coords holds the ndim passed.
        check(unsafe { sys::spmd_mesh_device_at(self.ptr, coords.len(), ptr_or_null(coords), &mut d) })?;
        Ok(d)
    }

    /// Mesh coordinates of device `device_id`.
    pub fn device_coords(&self, device_id: i32) -> Result<Vec<i64>> {
        let mut coords = [0i64; MAX_NDIM];
        let mut ndim = 0usize;
        // SAFETY: coords holds MAX_NDIM values, the most a mesh has.
        check(unsafe { sys::spmd_mesh_device_coords(self.ptr, device_id, MAX_NDIM, coords.as_mut_ptr(), &mut ndim) })?;
        Ok(coords[..ndim.min(MAX_NDIM)].to_vec())
    }

    /// The `index`-th device in row-major mesh order (`mesh.devices.flat[i]`).
    pub fn device(&self, index: usize) -> Result<i32> {
        let mut d = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_mesh_device(self.ptr, index, &mut d) })?;
        Ok(d)
    }

    /// Every device, in row-major mesh order.
    pub fn devices(&self) -> Result<Vec<i32>> {
        (0..self.size()?).map(|i| self.device(i)).collect()
    }

    /// Whether two meshes are equal: same runtime, axis names, sizes and
    /// devices.
    pub fn equals(&self, other: &Mesh) -> Result<bool> {
        let mut eq = 0;
        // SAFETY: live handles, valid out pointer.
        check(unsafe { sys::spmd_mesh_equal(self.ptr, other.ptr, &mut eq) })?;
        Ok(eq != 0)
    }

    /// JAX's str(mesh): "Mesh('x': 2, 'y': 4)".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_mesh_to_string(self.ptr, out) })
    }
}

impl PartialEq for Mesh {
    fn eq(&self, other: &Mesh) -> bool {
        self.equals(other).unwrap_or(false)
    }
}

impl fmt::Display for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text().map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
