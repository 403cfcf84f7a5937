//! Errors: the status of a failed call and the library's message for it.
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;

use crate::sys;

/// Why a call failed: the non-OK values of the C API's `spmd_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// A bad value, NULL, or a destroyed handle.
    InvalidArgument,
    /// An index past the end (shard, device, axis).
    OutOfRange,
    /// An allocation failed.
    OutOfMemory,
    /// Valid, but not built in or not available.
    Unsupported,
    /// A peer never reached a collective.
    Timeout,
    /// A user callback reported failure (or panicked).
    Callback,
    /// A bug in libspmd.
    Internal,
}

impl Status {
    /// The status a C status code stands for: `None` for `SPMD_OK`; a value
    /// that is no `spmd_status` counts as [`Status::Internal`].
    pub fn from_raw(raw: sys::spmd_status) -> Option<Status> {
        match raw {
            sys::SPMD_OK => None,
            sys::SPMD_ERR_INVALID_ARGUMENT => Some(Status::InvalidArgument),
            sys::SPMD_ERR_OUT_OF_RANGE => Some(Status::OutOfRange),
            sys::SPMD_ERR_OUT_OF_MEMORY => Some(Status::OutOfMemory),
            sys::SPMD_ERR_UNSUPPORTED => Some(Status::Unsupported),
            sys::SPMD_ERR_TIMEOUT => Some(Status::Timeout),
            sys::SPMD_ERR_CALLBACK => Some(Status::Callback),
            _ => Some(Status::Internal),
        }
    }

    /// The C status code.
    pub fn to_raw(self) -> sys::spmd_status {
        match self {
            Status::InvalidArgument => sys::SPMD_ERR_INVALID_ARGUMENT,
            Status::OutOfRange => sys::SPMD_ERR_OUT_OF_RANGE,
            Status::OutOfMemory => sys::SPMD_ERR_OUT_OF_MEMORY,
            Status::Unsupported => sys::SPMD_ERR_UNSUPPORTED,
            Status::Timeout => sys::SPMD_ERR_TIMEOUT,
            Status::Callback => sys::SPMD_ERR_CALLBACK,
            Status::Internal => sys::SPMD_ERR_INTERNAL,
        }
    }

    /// The library's name of the status ("invalid argument").
    pub fn description(self) -> &'static str {
        // SAFETY: spmd_status_string returns a static string, never NULL.
        let s = unsafe { CStr::from_ptr(sys::spmd_status_string(self.to_raw())) };
        s.to_str().unwrap_or("unknown status")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A failed call: its status and the library's message, which names the
/// function, the argument and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure.
    pub status: Status,
    /// The message (`spmd_last_error()` right after the failing call, on the
    /// thread that made it), or the binding's own for checks made in Rust.
    pub message: String,
}

impl Error {
    /// An error with a message of the caller's: what a shard_map closure
    /// returns to fail its device.
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// The error of a call that just returned `raw`, with this thread's
    /// last error message.
    pub(crate) fn last(raw: sys::spmd_status) -> Error {
        Error { status: Status::from_raw(raw).unwrap_or(Status::Internal), message: last_error() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{}: {}", self.status, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// `Result<T, spmd::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Ok for `SPMD_OK`, else the error with this thread's message.
pub(crate) fn check(raw: sys::spmd_status) -> Result<()> {
    if raw == sys::SPMD_OK {
        Ok(())
    } else {
        Err(Error::last(raw))
    }
}

/// The message of the last failed libspmd call on this thread ("" when none).
pub fn last_error() -> String {
    // SAFETY: spmd_last_error never returns NULL; the text is copied before
    // any other libspmd call on this thread.
    unsafe { from_c(sys::spmd_last_error()) }
}

/// Forgets this thread's last error, so [`last_error`] returns "".
pub fn clear_error() {
    // SAFETY: no arguments; touches only this thread's state.
    unsafe { sys::spmd_clear_error() }
}

/// Copies a C string (NULL gives "").
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
pub(crate) unsafe fn from_c(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Runs a call that returns a new string the caller frees, and takes it.
pub(crate) fn out_string(call: impl FnOnce(*mut *mut c_char) -> sys::spmd_status) -> Result<String> {
    let mut p: *mut c_char = std::ptr::null_mut();
    check(call(&mut p))?;
    // SAFETY: on success p is a new string owned by us; freed once here.
    unsafe {
        let s = from_c(p);
        sys::spmd_string_free(p);
        Ok(s)
    }
}

/// Runs a call that returns a string borrowed from a live handle (an axis
/// name), and copies it.
pub(crate) fn borrowed_string(call: impl FnOnce(*mut *const c_char) -> sys::spmd_status) -> Result<String> {
    let mut p: *const c_char = std::ptr::null();
    check(call(&mut p))?;
    // SAFETY: on success p is NULL or a valid string owned by the handle,
    // which outlives this copy.
    Ok(unsafe { from_c(p) })
}

/// A C copy of a Rust string; one with a NUL inside is refused.
pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what}: the string {s:?} contains a NUL byte")))
}

/// A C copy of a path: its bytes as they are on Unix, elsewhere its UTF-8
/// text (a path that is not valid Unicode is refused there); one with a NUL
/// inside is refused.
pub(crate) fn c_path(what: &str, path: &std::path::Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid(format!("{what}: the path {path:?} is not valid Unicode")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid(format!("{what}: the path {path:?} contains a NUL byte")))
}
