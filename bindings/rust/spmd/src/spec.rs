//! Partition specs: which mesh axes split each array dimension.
use std::fmt;
use std::os::raw::c_char;

use crate::error::{c_string, check, from_c, out_string, Error, Result};
use crate::{out_handle, ptr_or_null, sys};

crate::handle!(
    /// A partition spec (`jax.sharding.PartitionSpec`): per array dimension,
    /// none or several mesh axes. A plain value with no mesh attached.
    ///
    /// Thread rules: immutable but for [`Spec::append`], which takes
    /// `&mut self`, so nothing reads the spec while it grows.
    Spec,
    sys::spmd_spec,
    sys::spmd_spec_destroy
);

impl Spec {
    /// Parses a spec: short ("data, None", "(x, y), None", "x", "") or JAX
    /// ("P('data', None)", "PartitionSpec(('x', 'y'),)").
    pub fn parse(text: &str) -> Result<Spec> {
        let c = c_string("Spec::parse", text)?;
        // SAFETY: valid string and out pointer.
        let ptr = out_handle(|out| unsafe { sys::spmd_spec_parse(c.as_ptr(), out) })?;
        Ok(Spec { ptr })
    }

    /// The empty spec P(), grown with [`Spec::append`].
    pub fn new() -> Result<Spec> {
        // SAFETY: valid out pointer.
        let ptr = out_handle(|out| unsafe { sys::spmd_spec_create(out) })?;
        Ok(Spec { ptr })
    }

    /// Appends one dimension split over `axes` (none: replicated, None).
    pub fn append(&mut self, axes: &[&str]) -> Result<()> {
        let names = axes.iter().map(|a| c_string("Spec::append", a)).collect::<Result<Vec<_>>>()?;
        let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        // SAFETY: &mut self: no other use of the spec meanwhile; ptrs holds naxes names.
        check(unsafe { sys::spmd_spec_append(self.ptr, ptr_or_null(&ptrs), ptrs.len()) })
    }

    /// A spec of the given dimensions: `Spec::from_dims(&[&["x"], &[]])` is
    /// P('x', None).
    pub fn from_dims(dims: &[&[&str]]) -> Result<Spec> {
        let mut spec = Spec::new()?;
        for axes in dims {
            spec.append(axes)?;
        }
        Ok(spec)
    }

    /// Number of dimensions the spec names.
    pub fn ndim(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_spec_ndim(self.ptr, &mut n) })?;
        Ok(n)
    }

    /// The mesh axes splitting dimension `dim` (empty for None).
    pub fn dim(&self, dim: usize) -> Result<Vec<String>> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::spmd_spec_dim_size(self.ptr, dim, &mut n) })?;
        (0..n)
            .map(|i| {
                let mut p: *const c_char = std::ptr::null();
                // SAFETY: the name is borrowed from the spec and copied at once.
                check(unsafe { sys::spmd_spec_dim_axis(self.ptr, dim, i, &mut p) })?;
                Ok(unsafe { from_c(p) })
            })
            .collect()
    }

    /// Every dimension's axes.
    pub fn dims(&self) -> Result<Vec<Vec<String>>> {
        (0..self.ndim()?).map(|d| self.dim(d)).collect()
    }

    /// Whether two specs are equal once trailing Nones are dropped.
    pub fn equals(&self, other: &Spec) -> Result<bool> {
        let mut eq = 0;
        // SAFETY: live handles, valid out pointer.
        check(unsafe { sys::spmd_spec_equal(self.ptr, other.ptr, &mut eq) })?;
        Ok(eq != 0)
    }

    /// JAX's str: "PartitionSpec('x', None)".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_spec_to_string(self.ptr, out) })
    }
}

impl PartialEq for Spec {
    fn eq(&self, other: &Spec) -> bool {
        self.equals(other).unwrap_or(false)
    }
}

impl std::str::FromStr for Spec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Spec> {
        Spec::parse(s)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text().map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
