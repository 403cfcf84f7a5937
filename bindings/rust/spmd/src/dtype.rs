//! Element types and the Rust types that hold them.
use std::ffi::CStr;
use std::fmt;

use crate::error::{c_string, Error, Result};
use crate::{out_value, sys};

/// Element types of arrays (`spmd_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// float32
    F32,
    /// float64
    F64,
    /// IEEE binary16, held as raw `u16` bits on the host
    F16,
    /// bfloat16, held as raw `u16` bits on the host
    BF16,
    /// int32
    I32,
    /// int64
    I64,
    /// uint8
    U8,
    /// bool, one byte holding 0 or 1
    Bool,
    /// int8
    I8,
    /// int16
    I16,
    /// uint16
    U16,
    /// uint32
    U32,
}

impl DType {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_dtype {
        match self {
            DType::F32 => sys::SPMD_F32,
            DType::F64 => sys::SPMD_F64,
            DType::F16 => sys::SPMD_F16,
            DType::BF16 => sys::SPMD_BF16,
            DType::I32 => sys::SPMD_I32,
            DType::I64 => sys::SPMD_I64,
            DType::U8 => sys::SPMD_U8,
            DType::Bool => sys::SPMD_BOOL,
            DType::I8 => sys::SPMD_I8,
            DType::I16 => sys::SPMD_I16,
            DType::U16 => sys::SPMD_U16,
            DType::U32 => sys::SPMD_U32,
        }
    }

    /// The dtype of a C value; `None` for `SPMD_DTYPE_INVALID` and unknown
    /// values.
    pub fn from_raw(raw: sys::spmd_dtype) -> Option<DType> {
        Some(match raw {
            sys::SPMD_F32 => DType::F32,
            sys::SPMD_F64 => DType::F64,
            sys::SPMD_F16 => DType::F16,
            sys::SPMD_BF16 => DType::BF16,
            sys::SPMD_I32 => DType::I32,
            sys::SPMD_I64 => DType::I64,
            sys::SPMD_U8 => DType::U8,
            sys::SPMD_BOOL => DType::Bool,
            sys::SPMD_I8 => DType::I8,
            sys::SPMD_I16 => DType::I16,
            sys::SPMD_U16 => DType::U16,
            sys::SPMD_U32 => DType::U32,
            _ => return None,
        })
    }

    /// float16 or bfloat16, held on the host as raw `u16` bits.
    pub(crate) fn is_half(self) -> bool {
        self == DType::F16 || self == DType::BF16
    }

    pub(crate) fn from_raw_checked(raw: sys::spmd_dtype) -> Result<DType> {
        DType::from_raw(raw).ok_or_else(|| Error::new(crate::Status::Internal, format!("unknown dtype {raw}")))
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        // SAFETY: any value is accepted.
        unsafe { sys::spmd_dtype_size(self.to_raw()) }
    }

    /// The JAX/NumPy name ("float32", "bfloat16", "bool").
    pub fn name(self) -> &'static str {
        // SAFETY: a valid dtype gives a static string.
        let p = unsafe { sys::spmd_dtype_name(self.to_raw()) };
        if p.is_null() {
            return "invalid";
        }
        unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("invalid")
    }

    /// The dtype called `name` ("float32", "int32", "bool", ...).
    pub fn from_name(name: &str) -> Result<DType> {
        let c = c_string("DType::from_name", name)?;
        // SAFETY: c is a valid string, raw a valid out pointer.
        DType::from_raw_checked(out_value(|raw| unsafe { sys::spmd_dtype_from_name(c.as_ptr(), raw) })?)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<DType> {
        DType::from_name(s)
    }
}

mod private {
    pub trait Sealed {}
}

/// A Rust type whose values are the elements of one dtype: f32, f64, i8,
/// i16, i32, i64, u8, u16, u32 and bool. Sealed: the binding implements it
/// for exactly these (`u16` is uint16's; half-precision arrays move as raw
/// `u16` bits through their own calls, see
/// [`Array::from_host_bits`](crate::Array::from_host_bits)).
pub trait Element: Copy + Send + Sync + private::Sealed + 'static {
    /// The dtype of this Rust type.
    const DTYPE: DType;
    /// Whether these bytes, written by the library, are valid values of the
    /// type (only bool has invalid byte patterns).
    #[doc(hidden)]
    fn valid_bytes(_bytes: &[u8]) -> bool {
        true
    }
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl private::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
        }
    };
}
element!(f32, DType::F32);
element!(f64, DType::F64);
element!(i32, DType::I32);
element!(i64, DType::I64);
element!(u8, DType::U8);
element!(i8, DType::I8);
element!(i16, DType::I16);
element!(u16, DType::U16);
element!(u32, DType::U32);
impl private::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn valid_bytes(bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| b <= 1)
    }
}
