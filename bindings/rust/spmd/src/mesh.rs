//! Device meshes: devices arranged in a grid with named axes.
use crate::error::{borrowed_string, c_string, out_string, Error, Result};
use crate::{c_device, c_sizes, from_c_size, out_shape, out_value, ptr_or_null, sys, CStrings, Runtime};

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
    pub fn new(runtime: &Runtime, shape: &[usize], axis_names: &[&str]) -> Result<Mesh> {
        Mesh::create(runtime, shape, axis_names, None)
    }

    /// A mesh over the given devices, `prod(shape)` distinct ids in row-major
    /// mesh order.
    pub fn with_devices(runtime: &Runtime, shape: &[usize], axis_names: &[&str], devices: &[usize]) -> Result<Mesh> {
        Mesh::create(runtime, shape, axis_names, Some(devices))
    }

    fn create(runtime: &Runtime, shape: &[usize], axis_names: &[&str], devices: Option<&[usize]>) -> Result<Mesh> {
        if shape.len() != axis_names.len() {
            return Err(Error::invalid(format!(
                "Mesh::new: {} axis sizes but {} axis names",
                shape.len(),
                axis_names.len()
            )));
        }
        if let Some(devices) = devices {
            let want: usize = shape.iter().product();
            if devices.len() != want {
                return Err(Error::invalid(format!(
                    "Mesh::with_devices: a mesh of shape {shape:?} takes {want} device ids, not {}",
                    devices.len()
                )));
            }
        }
        let names = CStrings::new("Mesh::new", axis_names)?;
        let shape = c_sizes("Mesh::new: shape", shape)?;
        let ids = match devices {
            Some(d) => {
                Some(d.iter().map(|&id| c_device("Mesh::with_devices: devices", id)).collect::<Result<Vec<_>>>()?)
            }
            None => None,
        };
        let ids = ids.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
        // SAFETY: shape and names hold ndim entries, ids prod(shape) or NULL.
        Mesh::from_call(|out| unsafe {
            sys::spmd_mesh_create(
                runtime.as_ptr(),
                shape.len(),
                ptr_or_null(&shape),
                ptr_or_null(names.ptrs()),
                ids,
                out,
            )
        })
    }

    /// Number of axes.
    pub fn ndim(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_mesh_ndim(self.ptr, n) })
    }

    /// Number of devices, prod(shape).
    pub fn size(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_mesh_size(self.ptr, n) })
    }

    /// Name of axis `axis`.
    pub fn axis_name(&self, axis: usize) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        borrowed_string(|p| unsafe { sys::spmd_mesh_axis_name(self.ptr, axis, p) })
    }

    /// The axis names, in order.
    pub fn axis_names(&self) -> Result<Vec<String>> {
        (0..self.ndim()?).map(|a| self.axis_name(a)).collect()
    }

    /// Size of axis `axis`.
    pub fn axis_size(&self, axis: usize) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        from_c_size(out_value(|n| unsafe { sys::spmd_mesh_axis_size(self.ptr, axis, n) })?)
    }

    /// The axis sizes, in order.
    pub fn shape(&self) -> Result<Vec<usize>> {
        (0..self.ndim()?).map(|a| self.axis_size(a)).collect()
    }

    /// Index of the axis called `name`.
    pub fn axis_index(&self, name: &str) -> Result<usize> {
        let c = c_string("Mesh::axis_index", name)?;
        // SAFETY: live handle, valid string and out pointer.
        out_value(|i| unsafe { sys::spmd_mesh_axis_index(self.ptr, c.as_ptr(), i) })
    }

    /// The device at mesh coordinates `coords` (one per axis).
    pub fn device_at(&self, coords: &[usize]) -> Result<usize> {
        let coords = c_sizes("Mesh::device_at: coords", coords)?;
        // SAFETY: coords holds the ndim passed.
        from_c_size(out_value(|d| unsafe {
            sys::spmd_mesh_device_at(self.ptr, coords.len(), ptr_or_null(&coords), d)
        })?)
    }

    /// Mesh coordinates of device `device_id`.
    pub fn device_coords(&self, device_id: usize) -> Result<Vec<usize>> {
        let device_id = c_device("Mesh::device_coords: device_id", device_id)?;
        // SAFETY: out_shape's buffer holds the capacity passed.
        out_shape(|cap, coords, ndim| unsafe { sys::spmd_mesh_device_coords(self.ptr, device_id, cap, coords, ndim) })
    }

    /// The `index`-th device in row-major mesh order (`mesh.devices.flat[i]`).
    pub fn device(&self, index: usize) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        from_c_size(out_value(|d| unsafe { sys::spmd_mesh_device(self.ptr, index, d) })?)
    }

    /// Every device, in row-major mesh order.
    pub fn devices(&self) -> Result<Vec<usize>> {
        (0..self.size()?).map(|i| self.device(i)).collect()
    }

    /// Whether two meshes are equal: same runtime, axis names, sizes and
    /// devices.
    pub fn equals(&self, other: &Mesh) -> Result<bool> {
        // SAFETY: live handles, valid out pointer.
        Ok(out_value(|eq| unsafe { sys::spmd_mesh_equal(self.ptr, other.ptr, eq) })? != 0)
    }

    /// JAX's str(mesh): "Mesh('x': 2, 'y': 4)".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_mesh_to_string(self.ptr, out) })
    }
}

crate::text_and_equality!(Mesh);
