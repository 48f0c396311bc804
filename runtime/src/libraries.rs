//! Whether the CUDA libraries can be loaded. cudarc panics when it calls into a library
//! that is absent, so every entry point asks here first and returns an [`Error`] instead.

use crate::Error;

fn candidates(name: &str) -> String {
    let mut names = cudarc::get_lib_name_candidates(name);
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names.join(", ")
}

/// True when libnvrtc can be loaded (it needs no GPU).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library; calls nothing in it.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// True when the CUDA driver library (libcuda) can be loaded.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library; calls nothing in it.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// True when NCCL (libnccl, what [`DeviceGroup`](crate::DeviceGroup)s of GPUs move data
/// with) can be loaded.
pub fn nccl_available() -> bool {
    // SAFETY: only tries to dlopen the library; calls nothing in it.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

pub(crate) fn require_nccl() -> Result<(), Error> {
    if nccl_available() {
        Ok(())
    } else {
        Err(Error::NcclMissing { tried: candidates("nccl") })
    }
}

pub(crate) fn require_nvrtc() -> Result<(), Error> {
    if nvrtc_available() {
        Ok(())
    } else {
        Err(Error::NvrtcMissing { tried: candidates("nvrtc") })
    }
}

pub(crate) fn require_driver() -> Result<(), Error> {
    if driver_available() {
        Ok(())
    } else {
        Err(Error::DriverMissing { tried: candidates("cuda") })
    }
}
