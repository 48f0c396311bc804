//! A compiled simulation library, loaded: its entry point, its fault hook and the kernel's
//! parameter types. Libraries stay loaded for the life of the process (the fault handler may
//! call into any of them), one per distinct translation unit, shared by every `Simulator`.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::fault::{self, FaultHook};
use crate::Error;

/// The ABI of `tessera_sim.h` this runtime speaks (`tessera_sim::kAbiVersion`).
const ABI_VERSION: c_uint = 4;

/// `tessera_sim::Launch`.
#[repr(C)]
pub(crate) struct LaunchFfi {
    pub args: *const *mut c_void,
    pub arg_count: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub thread_order: *const u32,
    pub block_order: *const u32,
    pub stack_bytes: u64,
    /// 1: cp.async copies land when issued; 0: at the wait that covers them.
    pub async_copies_at_issue: u32,
    /// Blocks of a cluster along x, y, z (1, 1, 1 without clusters).
    pub cluster: [u32; 3],
}

/// `tessera_sim::Status`.
pub(crate) mod status {
    pub const OK: i32 = 0;
    pub const BARRIER_DIVERGENCE: i32 = 1;
    pub const WARP_DIVERGENCE: i32 = 2;
    pub const FAULT: i32 = 3;
    pub const STACK_OVERFLOW: i32 = 4;
    pub const TRAP: i32 = 5;
}

/// `tessera_sim::Report`.
#[repr(C)]
pub(crate) struct ReportFfi {
    pub status: i32,
    pub signal: i32,
    pub address: u64,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub waiting: u32,
    pub finished: u32,
    pub other: [u32; 3],
    pub mask: u32,
    pub code: i32,
    pub message: [c_char; 400],
}

impl ReportFfi {
    pub fn message(&self) -> String {
        let bytes: Vec<u8> = self.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

type Entry = unsafe extern "C" fn(*const LaunchFfi, *mut ReportFfi) -> c_int;

pub(crate) struct SimLibrary {
    entry: Entry,
    fault: FaultHook,
    /// The kernel's parameter types as the header names them: `const f32*`, `i32`, ...
    pub signature: Vec<String>,
    _library: libloading::Library,
}

impl SimLibrary {
    fn open(path: &Path) -> Result<Self, Error> {
        let failed = |reason: String| Error::SimLoad { path: path.display().to_string(), reason };
        // SAFETY: the library is one tessera compiled from its own header; its initializers
        // only set up static storage.
        let library = unsafe {
            libloading::os::unix::Library::open(
                Some(path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
            )
        }
        .map_err(|e| failed(e.to_string()))?;
        let library = libloading::Library::from(library);
        // SAFETY: the symbols have these types in tessera_sim.h; the library outlives them
        // (it is stored beside them and never unloaded while they are used).
        unsafe {
            let abi = *library
                .get::<unsafe extern "C" fn() -> c_uint>(c"tessera_sim_abi")
                .map_err(|e| failed(e.to_string()))?;
            let version = abi();
            if version != ABI_VERSION {
                return Err(failed(format!("it speaks simulator ABI {version}, this runtime {ABI_VERSION}")));
            }
            let entry = *library.get::<Entry>(c"tessera_sim_entry").map_err(|e| failed(e.to_string()))?;
            let fault = *library.get::<FaultHook>(c"tessera_sim_fault").map_err(|e| failed(e.to_string()))?;
            let signature_of = *library
                .get::<unsafe extern "C" fn() -> *const c_char>(c"tessera_sim_signature")
                .map_err(|e| failed(e.to_string()))?;
            let text = signature_of();
            if text.is_null() {
                return Err(failed("it has no kernel signature".into()));
            }
            let text = CStr::from_ptr(text).to_string_lossy();
            let signature = if text.is_empty() { Vec::new() } else { text.split(',').map(str::to_owned).collect() };
            Ok(Self { entry, fault, signature, _library: library })
        }
    }

    /// Runs one launch to its end (or its first error) on this thread.
    pub fn run(&self, launch: &LaunchFfi) -> ReportFfi {
        // SAFETY: ReportFfi is plain data; all zeros is a valid value.
        let mut report: ReportFfi = unsafe { std::mem::zeroed() };
        // SAFETY: `launch` matches tessera_sim::Launch and points at live arguments and
        // orders (the caller's). The entry point catches its own faults through the hook.
        fault::with_hook(self.fault, || unsafe { (self.entry)(launch, &mut report) });
        report
    }
}

type Slot = Arc<Mutex<Option<Arc<SimLibrary>>>>;

fn registry() -> &'static Mutex<HashMap<String, Slot>> {
    static LOADED: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The library for `key`, loaded once per process: `build` is called (at most once at a time
/// per key) to produce its file when it is not loaded yet; `after_load` runs once loaded.
pub(crate) fn load(
    key: &str,
    build: impl FnOnce() -> Result<PathBuf, Error>,
    after_load: impl FnOnce(&Path),
) -> Result<Arc<SimLibrary>, Error> {
    let slot = {
        let mut map = registry().lock().unwrap_or_else(|p| p.into_inner());
        map.entry(key.to_string()).or_default().clone()
    };
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = slot.as_ref() {
        return Ok(found.clone());
    }
    let path = build()?;
    let library = Arc::new(SimLibrary::open(&path)?);
    after_load(&path);
    *slot = Some(library.clone());
    Ok(library)
}
