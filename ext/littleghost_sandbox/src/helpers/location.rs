//! The directory this extension library was loaded from, so the core can find
//! the helper executable installed beside it (`core::helper`).

use std::ffi::{c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The loaded library's directory, from the dynamic loader's record of one of
/// its own functions; None if the loader cannot say.
pub fn library_directory() -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let address = library_directory as *const c_void;
    // SAFETY: `address` points into this library's code and `info` is a
    // writable Dl_info; dladdr only fills it in.
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr returned non-zero, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader for the
    // life of the mapping; we copy it at once.
    let file = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(file.to_bytes()));
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    path.parent().map(PathBuf::from)
}
