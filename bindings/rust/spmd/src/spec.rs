//! Partition specs: which mesh axes split each array dimension.
use crate::error::{borrowed_string, c_string, check, out_string, Error, Result};
use crate::{out_value, ptr_or_null, sys, CStrings};

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
        Spec::from_call(|out| unsafe { sys::spmd_spec_parse(c.as_ptr(), out) })
    }

    /// The empty spec P(), grown with [`Spec::append`].
    pub fn new() -> Result<Spec> {
        // SAFETY: valid out pointer.
        Spec::from_call(|out| unsafe { sys::spmd_spec_create(out) })
    }

    /// Appends one dimension split over `axes` (none: replicated, None).
    pub fn append(&mut self, axes: &[&str]) -> Result<()> {
        let names = CStrings::new("Spec::append", axes)?;
        // SAFETY: &mut self: no other use of the spec meanwhile; names holds naxes names.
        check(unsafe { sys::spmd_spec_append(self.ptr, ptr_or_null(names.ptrs()), names.ptrs().len()) })
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
        // SAFETY: live handle, valid out pointer.
        out_value(|n| unsafe { sys::spmd_spec_ndim(self.ptr, n) })
    }

    /// The mesh axes splitting dimension `dim` (empty for None).
    pub fn dim(&self, dim: usize) -> Result<Vec<String>> {
        // SAFETY: live handle, valid out pointers.
        let n = out_value(|n| unsafe { sys::spmd_spec_dim_size(self.ptr, dim, n) })?;
        (0..n).map(|i| borrowed_string(|p| unsafe { sys::spmd_spec_dim_axis(self.ptr, dim, i, p) })).collect()
    }

    /// Every dimension's axes.
    pub fn dims(&self) -> Result<Vec<Vec<String>>> {
        (0..self.ndim()?).map(|d| self.dim(d)).collect()
    }

    /// Whether two specs are equal once trailing Nones are dropped.
    pub fn equals(&self, other: &Spec) -> Result<bool> {
        // SAFETY: live handles, valid out pointer.
        Ok(out_value(|eq| unsafe { sys::spmd_spec_equal(self.ptr, other.ptr, eq) })? != 0)
    }

    /// JAX's str: "PartitionSpec('x', None)".
    pub fn to_text(&self) -> Result<String> {
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_spec_to_string(self.ptr, out) })
    }
}

crate::text_and_equality!(Spec);

impl std::str::FromStr for Spec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Spec> {
        Spec::parse(s)
    }
}
