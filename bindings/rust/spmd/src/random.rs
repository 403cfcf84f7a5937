//! Random numbers identical to jax.random (threefry2x32), generated sharded.
//!
//! The draws of [`Key`] read the key when called: recorded into a
//! [`Program`](crate::Program), such a draw gives the same numbers at every
//! run. [`Key::data`] makes the key an array, `jax.random.key_data`'s
//! uint32\[2\], and [`Key::normal_from`] and co. read the key from such an
//! array: given an input of [`Program::record`](crate::Program::record),
//! they record the draw, and each run draws from the key data it is given,
//! as a function under `jax.jit` draws from the key it is passed;
//! [`Key::fold_in_from`] and [`Key::split_from`] derive key data from key
//! data, so that a program derives each step's keys from the one it is
//! given. These are experimental (`spmd/experimental/random.h`): they may change in any
//! release.
use crate::error::{check, Result};
use crate::{c_sizes, mut_ptr_or_null, ptr_or_null, sys, Array, DType, Sharding};

/// A PRNG key: the two words of JAX's legacy uint32\[2\] key data. A plain
/// value; copy it freely.
#[derive(Clone, Copy)]
pub struct Key(sys::spmd_key);

impl Key {
    /// jax.random.PRNGKey(seed).
    pub fn new(seed: u64) -> Key {
        let mut k = sys::spmd_key { words: [0, 0] };
        // SAFETY: valid out pointer; the call fails only for NULL.
        let st = unsafe { sys::spmd_random_key(seed, &mut k) };
        debug_assert_eq!(st, sys::SPMD_OK);
        Key(k)
    }

    /// A key from its two words, as np.asarray(key) shows them.
    pub fn from_words(words: [u32; 2]) -> Key {
        Key(sys::spmd_key { words })
    }

    /// The key data.
    pub fn words(&self) -> [u32; 2] {
        self.0.words
    }

    /// jax.random.split(key, n): n new keys.
    pub fn split(&self, n: usize) -> Vec<Key> {
        let mut out = vec![sys::spmd_key { words: [0, 0] }; n];
        // SAFETY: out holds n keys (NULL when n is 0).
        let st = unsafe { sys::spmd_random_split(&self.0, n, mut_ptr_or_null(&mut out)) };
        debug_assert_eq!(st, sys::SPMD_OK);
        out.into_iter().map(Key).collect()
    }

    /// jax.random.fold_in(key, data).
    pub fn fold_in(&self, data: u32) -> Key {
        let mut k = sys::spmd_key { words: [0, 0] };
        // SAFETY: valid pointers; the call fails only for NULL.
        let st = unsafe { sys::spmd_random_fold_in(&self.0, data, &mut k) };
        debug_assert_eq!(st, sys::SPMD_OK);
        Key(k)
    }

    /// jax.random.bits: uniform random bits (dtype U8, U16, U32, I32 holding
    /// uint32 bits, or I64 holding uint64 bits) laid out by `sharding`.
    pub fn bits(&self, sharding: &Sharding, dtype: DType, shape: &[usize]) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_random_bits(sharding.as_ptr(), &self.0, dtype.to_raw(), shape.len(), ptr_or_null(&shape), out)
        })
    }

    /// jax.random.uniform: floats in \[minval, maxval).
    pub fn uniform(
        &self,
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        minval: f64,
        maxval: f64,
    ) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_random_uniform(
                sharding.as_ptr(),
                &self.0,
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                minval,
                maxval,
                out,
            )
        })
    }

    /// jax.random.normal: standard normal floats.
    pub fn normal(&self, sharding: &Sharding, dtype: DType, shape: &[usize]) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_random_normal(sharding.as_ptr(), &self.0, dtype.to_raw(), shape.len(), ptr_or_null(&shape), out)
        })
    }

    /// jax.random.truncated_normal: standard normal floats in (lower, upper).
    pub fn truncated_normal(
        &self,
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        lower: f64,
        upper: f64,
    ) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_random_truncated_normal(
                sharding.as_ptr(),
                &self.0,
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                lower,
                upper,
                out,
            )
        })
    }
}

/// Keys as arrays (experimental: `spmd/experimental/random.h`).
impl Key {
    /// `jax.random.key_data(key)`: the key's two words as a uint32\[2\]
    /// array laid out by `sharding` (a replicated one, normally; its spec
    /// names at most one dimension), what [`Key::normal_from`] and co. read.
    ///
    /// Experimental (`spmd/experimental/random.h`): it may change in any
    /// release.
    #[doc(alias = "key_data")]
    pub fn data(&self, sharding: &Sharding) -> Result<Array> {
        // SAFETY: live handle, valid key and out pointer.
        Array::from_call(|out| unsafe { sys::spmd_x_random_key_data(sharding.as_ptr(), &self.0, out) })
    }

    /// [`Key::bits`] with the key read from `key`, a uint32\[2\] array of
    /// key data ([`Key::data`]; any layout). Given a value of a program
    /// being recorded, records the draw: each run reads the key it is
    /// given. Outside programs the values are those of [`Key::bits`] for
    /// the same key, bit for bit. Errors: those of [`Key::bits`], and a
    /// `key` of another dtype or shape or on another runtime (the message
    /// names `key`).
    ///
    /// Experimental (`spmd/experimental/random.h`): it may change in any
    /// release.
    pub fn bits_from(key: &Array, sharding: &Sharding, dtype: DType, shape: &[usize]) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: live handles; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_x_random_bits_from(
                sharding.as_ptr(),
                key.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                out,
            )
        })
    }

    /// [`Key::uniform`] with the key read from `key`, as
    /// [`Key::bits_from`]. Experimental.
    pub fn uniform_from(
        key: &Array,
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        minval: f64,
        maxval: f64,
    ) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: live handles; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_x_random_uniform_from(
                sharding.as_ptr(),
                key.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                minval,
                maxval,
                out,
            )
        })
    }

    /// [`Key::normal`] with the key read from `key`, as
    /// [`Key::bits_from`]. Experimental.
    pub fn normal_from(key: &Array, sharding: &Sharding, dtype: DType, shape: &[usize]) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: live handles; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_x_random_normal_from(
                sharding.as_ptr(),
                key.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                out,
            )
        })
    }

    /// [`Key::truncated_normal`] with the key read from `key`, as
    /// [`Key::bits_from`]. Experimental.
    pub fn truncated_normal_from(
        key: &Array,
        sharding: &Sharding,
        dtype: DType,
        shape: &[usize],
        lower: f64,
        upper: f64,
    ) -> Result<Array> {
        let shape = c_sizes("shape", shape)?;
        // SAFETY: live handles; shape holds ndim sizes.
        Array::from_call(|out| unsafe {
            sys::spmd_x_random_truncated_normal_from(
                sharding.as_ptr(),
                key.as_ptr(),
                dtype.to_raw(),
                shape.len(),
                ptr_or_null(&shape),
                lower,
                upper,
                out,
            )
        })
    }

    /// [`Key::fold_in`] on key data: `jax.random.fold_in` with the key read
    /// from `key`, a uint32\[2\] array of key data ([`Key::data`]), the
    /// new key's data laid out as `key`. Given a value of a program being
    /// recorded, records itself, so that a program derives a key from the
    /// one each run is given. Errors: a `key` of another dtype or shape (the
    /// message names `key`).
    ///
    /// Experimental (`spmd/experimental/random.h`): it may change in any
    /// release.
    #[doc(alias = "fold_in")]
    pub fn fold_in_from(key: &Array, data: u32) -> Result<Array> {
        // SAFETY: a live handle and a valid out pointer.
        Array::from_call(|out| unsafe { sys::spmd_x_random_fold_in_from(key.as_ptr(), data, out) })
    }

    /// [`Key::split`] on key data: the data of `jax.random.split(key, n)`'s
    /// n keys, each a uint32\[2\] array laid out as `key`, ready for a
    /// draw (JAX's split gives one (n, 2) array). Given a value of a program
    /// being recorded, records itself as one step of n results. Errors: as
    /// [`Key::fold_in_from`].
    ///
    /// Experimental (`spmd/experimental/random.h`): it may change in any
    /// release.
    #[doc(alias = "split")]
    pub fn split_from(key: &Array, n: usize) -> Result<Vec<Array>> {
        let mut out: Vec<*mut sys::spmd_array> = vec![std::ptr::null_mut(); n];
        // SAFETY: a live handle; out has room for n handles (NULL when n is
        // 0), written only on success.
        check(unsafe { sys::spmd_x_random_split_from(key.as_ptr(), n, mut_ptr_or_null(&mut out)) })?;
        // SAFETY: on success each is a new array handle that we own.
        Ok(out.into_iter().map(|p| unsafe { Array::from_raw(p) }).collect())
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.0.words == other.0.words
    }
}

impl Eq for Key {}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({:?})", self.0.words)
    }
}
