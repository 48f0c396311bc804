//! Where NVRTC finds the CUDA headers a kernel includes. NVRTC has no include path of its
//! own, and kernels on 16-bit floats include `<cuda_fp16.h>` and `<cuda_bf16.h>`; every
//! compile passes `--include-path=<dir>` for the first of these folders that holds
//! `cuda_fp16.h`:
//!
//! 1. `$TESSERA_CUDA_INCLUDE` (`./dev` points it at the PyPI wheel `nvidia-cuda-runtime`
//!    it installs into `.tools/python`),
//! 2. `$CUDA_HOME/include`, then `$CUDA_PATH/include`,
//! 3. `/usr/local/cuda/include` (the toolkit, as on the GPU machine),
//! 4. `../include` beside the loaded libnvrtc: a pip-installed `nvidia/cu13/lib/libnvrtc.so.13`
//!    finds `nvidia/cu13/include`, a toolkit's `lib64/libnvrtc.so.13` its `include`.
//!
//! Under NVRTC 13, `cuda_fp16.h` and `cuda_bf16.h` include nothing else (their `.hpp`, the
//! vector types and `<nv/target>` are left out, or built into NVRTC), so that folder is all
//! they need. A source that includes either with no folder found is
//! [`Error::CudaHeadersMissing`], before NVRTC runs; other sources compile without one.
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use tessera_runtime::headers::IncludeSearch;
//! // an injected environment: nothing of the process's own is read
//! let search = IncludeSearch::from_env(
//!     |name| (name == "CUDA_HOME").then(|| "/opt/cuda".into()),
//!     &[PathBuf::from("/usr/local/cuda/include")],
//!     Some(Path::new("/venv/site-packages/nvidia/cu13/lib")),
//! );
//! assert_eq!(
//!     search.candidates(),
//!     [
//!         PathBuf::from("/opt/cuda/include"),
//!         PathBuf::from("/usr/local/cuda/include"),
//!         PathBuf::from("/venv/site-packages/nvidia/cu13/include"),
//!     ]
//! );
//! ```

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::Error;

/// The variable naming the include folder to use before any other.
pub const INCLUDE_VARIABLE: &str = "TESSERA_CUDA_INCLUDE";

/// The CUDA toolkit's include folder where it is usually installed.
pub const SYSTEM_INCLUDE: &str = "/usr/local/cuda/include";

/// The header whose presence makes a folder count.
pub const MARKER: &str = "cuda_fp16.h";

/// The headers a source may include that need the include folder.
pub const HALF_HEADERS: [&str; 2] = ["cuda_fp16.h", "cuda_bf16.h"];

/// The headers whose bytes stand for the folder's version in the disk cache's keys.
const FINGERPRINTED: [&str; 4] = ["cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"];

/// The folders to look in for the CUDA headers, in order (see the [module](self) docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludeSearch {
    candidates: Vec<PathBuf>,
}

impl IncludeSearch {
    /// Exactly these folders, in this order.
    pub fn new(candidates: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut seen = std::collections::HashSet::new();
        let candidates = candidates.into_iter().filter(|dir| seen.insert(dir.clone())).collect();
        Self { candidates }
    }

    /// The folders this process would search: its environment, [`SYSTEM_INCLUDE`], and the
    /// folder beside the libnvrtc it has loaded (none when it has loaded none yet).
    pub fn from_process() -> Self {
        let library_dir = loaded_nvrtc_library().and_then(|path| path.parent().map(Path::to_path_buf));
        Self::from_env(|name| std::env::var_os(name), &[PathBuf::from(SYSTEM_INCLUDE)], library_dir.as_deref())
    }

    /// The folders to search given an environment (`var` reads a variable; empty values count
    /// as unset), the toolkit folders to try after the variables (`system`), and the folder
    /// of the libnvrtc in use, whose sibling `include` is tried last.
    pub fn from_env(
        var: impl Fn(&str) -> Option<OsString>,
        system: &[PathBuf],
        nvrtc_library_dir: Option<&Path>,
    ) -> Self {
        let var = |name: &str| var(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        let mut candidates = Vec::new();
        candidates.extend(var(INCLUDE_VARIABLE));
        candidates.extend(var("CUDA_HOME").map(|home| home.join("include")));
        candidates.extend(var("CUDA_PATH").map(|path| path.join("include")));
        candidates.extend(system.iter().cloned());
        candidates.extend(nvrtc_library_dir.and_then(Path::parent).map(|root| root.join("include")));
        Self::new(candidates)
    }

    /// Every folder searched, in order.
    pub fn candidates(&self) -> &[PathBuf] {
        &self.candidates
    }

    /// The first folder that holds [`MARKER`].
    pub fn find(&self) -> Option<&Path> {
        self.candidates.iter().map(PathBuf::as_path).find(|dir| dir.join(MARKER).is_file())
    }

    /// The options that give NVRTC the headers `source` includes: `--include-path=<dir>` for
    /// the folder [`find`](Self::find) returns, none when there is none, and
    /// [`Error::CudaHeadersMissing`] (naming every folder searched) when there is none but
    /// `source` includes `<cuda_fp16.h>` or `<cuda_bf16.h>`.
    ///
    /// ```
    /// use tessera_runtime::{headers::IncludeSearch, Error};
    /// let nowhere = IncludeSearch::new([std::env::temp_dir().join("no-such-cuda/include")]);
    /// assert!(nowhere.include_options("k", "__global__ void k() {}").unwrap().is_empty());
    /// let half = "#include <cuda_fp16.h>\n__global__ void k() {}";
    /// assert!(matches!(nowhere.include_options("k", half), Err(Error::CudaHeadersMissing { .. })));
    /// ```
    pub fn include_options(&self, kernel: &str, source: &str) -> Result<Vec<String>, Error> {
        match (self.find(), included_half_header(source)) {
            (Some(dir), _) => Ok(vec![include_option(dir)]),
            (None, None) => Ok(Vec::new()),
            (None, Some(header)) => Err(Error::CudaHeadersMissing {
                kernel: kernel.into(),
                header: header.into(),
                searched: self.candidates.clone(),
            }),
        }
    }
}

fn include_option(dir: &Path) -> String {
    format!("--include-path={}", dir.display())
}

/// The first of [`HALF_HEADERS`] that an `#include` line of `source` names, if any (whatever
/// the `#if`s around it: NVRTC defines none of tessera's guards).
///
/// ```
/// use tessera_runtime::headers::included_half_header;
/// let source = "#ifndef TESSERA_SIM_H\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#endif";
/// assert_eq!(included_half_header(source), Some("cuda_fp16.h"));
/// assert_eq!(included_half_header("#  include \"cuda_bf16.h\""), Some("cuda_bf16.h"));
/// assert_eq!(included_half_header("// uses __half, includes nothing"), None);
/// ```
pub fn included_half_header(source: &str) -> Option<&'static str> {
    source.lines().filter_map(included_header).find_map(|name| HALF_HEADERS.into_iter().find(|&h| h == name))
}

/// The header an `#include <name>` or `#include "name"` line names.
fn included_header(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim_start();
    let (open, close) = match rest.chars().next()? {
        '<' => ('<', '>'),
        '"' => ('"', '"'),
        _ => return None,
    };
    let inner = rest.strip_prefix(open)?;
    inner.split(close).next().filter(|_| inner.contains(close)).map(str::trim)
}

/// The path of the libnvrtc this process has loaded (cudarc loads it at the first NVRTC
/// call), or `None` when it has loaded none. Loads nothing itself.
pub fn loaded_nvrtc_library() -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::ffi::{CStr, CString};
        use std::os::unix::ffi::OsStrExt;
        let mut names = cudarc::get_lib_name_candidates("nvrtc");
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        for name in names {
            let Ok(c_name) = CString::new(name) else { continue };
            // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded (adding a
            // reference, dropped below); it runs no initialisers and loads nothing.
            let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
            if handle.is_null() {
                continue;
            }
            // SAFETY: a live handle; the symbol name is NUL-terminated.
            let symbol = unsafe { libc::dlsym(handle, c"nvrtcVersion".as_ptr()) };
            let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a live out-parameter; dladdr only reads the loader's tables.
            let found = !symbol.is_null() && unsafe { libc::dladdr(symbol, &mut info) } != 0;
            let path = (found && !info.dli_fname.is_null()).then(|| {
                // SAFETY: dladdr's file name is a NUL-terminated string the loader owns while
                // the library stays loaded, which our reference guarantees until dlclose.
                let bytes = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
                PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
            });
            // SAFETY: drops the reference dlopen added; cudarc still holds its own.
            unsafe { libc::dlclose(handle) };
            if let Some(path) = path.filter(|p| p.is_absolute()) {
                return Some(path);
            }
        }
        None
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// What the disk cache's key holds of the include folder for `source`: nothing when the
/// source includes no header (the folder cannot change its cubin), else the digest of the
/// half headers' bytes — their version, not where this machine keeps them — so a cubin is
/// found again wherever the same headers live and rebuilt when they change.
pub(crate) fn cache_key_options(options: &[String], source: &str) -> Vec<String> {
    let includes_any = source.lines().any(|line| included_header(line).is_some());
    options
        .iter()
        .filter_map(|option| match option.strip_prefix("--include-path=") {
            None => Some(option.clone()),
            Some(_) if !includes_any => None,
            Some(dir) => Some(format!("--include-path=<cuda headers sha256 {}>", fingerprint(Path::new(dir)))),
        })
        .collect()
}

/// The sha256 of [`FINGERPRINTED`] in `dir` (absent ones counted as absent), once per
/// folder and process.
fn fingerprint(dir: &Path) -> String {
    static DIGESTS: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let digests = DIGESTS.get_or_init(Default::default);
    if let Some(digest) = digests.lock().ok().and_then(|d| d.get(dir).cloned()) {
        return digest;
    }
    let mut hasher = Sha256::new();
    for name in FINGERPRINTED {
        hasher.update(name.as_bytes());
        match std::fs::read(dir.join(name)) {
            Ok(bytes) => {
                hasher.update((bytes.len() as u64).to_le_bytes());
                hasher.update(&bytes);
            }
            Err(_) => hasher.update(b"\0absent"),
        }
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if let Ok(mut d) = digests.lock() {
        d.insert(dir.to_path_buf(), digest.clone());
    }
    digest
}

/// The folders searched, for [`Error::CudaHeadersMissing`]'s message.
pub(crate) fn describe_searched(searched: &[PathBuf]) -> String {
    if searched.is_empty() {
        return "no folder: none was named".into();
    }
    searched.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tessera-headers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_order_is_the_variable_then_cuda_home_cuda_path_the_toolkit_and_beside_nvrtc() {
        let env = |name: &str| -> Option<OsString> {
            match name {
                "TESSERA_CUDA_INCLUDE" => Some("/a".into()),
                "CUDA_HOME" => Some("/b".into()),
                "CUDA_PATH" => Some("".into()), // empty: unset
                _ => None,
            }
        };
        let search = IncludeSearch::from_env(env, &[PathBuf::from("/c/include")], Some(Path::new("/d/lib")));
        let want: Vec<PathBuf> = ["/a", "/b/include", "/c/include", "/d/include"].iter().map(PathBuf::from).collect();
        assert_eq!(search.candidates(), want);
        // duplicates are searched once
        let same = IncludeSearch::from_env(
            |name| (name == "CUDA_HOME").then(|| "/usr/local/cuda".into()),
            &[PathBuf::from("/usr/local/cuda/include")],
            None,
        );
        assert_eq!(same.candidates(), [PathBuf::from("/usr/local/cuda/include")]);
    }

    #[test]
    fn a_folder_counts_only_with_cuda_fp16_h() {
        let empty = temp_dir("empty");
        let full = temp_dir("full");
        std::fs::write(full.join(MARKER), "// fp16").unwrap();
        let search = IncludeSearch::new([empty.clone(), full.clone()]);
        assert_eq!(search.find(), Some(full.as_path()));
        assert_eq!(search.include_options("k", "").unwrap(), vec![format!("--include-path={}", full.display())]);
        let none = IncludeSearch::new([empty.clone()]);
        match none.include_options("k", "#include <cuda_bf16.h>\n") {
            Err(error @ Error::CudaHeadersMissing { .. }) => {
                let message = error.to_string();
                assert!(message.contains(&empty.display().to_string()), "{message}");
                assert!(message.contains("cuda_bf16.h") && message.contains("nvidia-cuda-runtime"), "{message}");
                assert!(message.contains("TESSERA_CUDA_INCLUDE"), "{message}");
            }
            other => panic!("expected CudaHeadersMissing, got {other:?}"),
        }
        let _ = std::fs::remove_dir_all(empty);
        let _ = std::fs::remove_dir_all(full);
    }

    #[test]
    fn include_lines_are_recognised_and_other_mentions_are_not() {
        assert_eq!(included_header("#include <cuda_fp16.h>"), Some("cuda_fp16.h"));
        assert_eq!(included_header("  #  include\t\"cuda_bf16.h\" // bf16"), Some("cuda_bf16.h"));
        assert_eq!(included_header("#include <cuda_fp16.h"), None);
        assert_eq!(included_header("#define X 1"), None);
        assert_eq!(included_half_header("// #include <cuda_fp16.h>"), None);
        assert_eq!(included_half_header("#include <cuda_fp8.h>"), None);
        assert_eq!(included_half_header("const char* s = \"cuda_fp16.h\";"), None);
    }

    #[test]
    fn cache_keys_hold_the_headers_bytes_not_their_folder() {
        let one = temp_dir("key-one");
        let two = temp_dir("key-two");
        for dir in [&one, &two] {
            std::fs::write(dir.join("cuda_fp16.h"), "// v1").unwrap();
        }
        let half = "#include <cuda_fp16.h>\n__global__ void k() {}";
        let plain = "__global__ void k() {}";
        let options = |dir: &Path| vec!["-lineinfo".to_string(), include_option(dir)];
        assert_eq!(cache_key_options(&options(&one), half), cache_key_options(&options(&two), half));
        assert_eq!(cache_key_options(&options(&one), plain), vec!["-lineinfo".to_string()]);
        assert_ne!(cache_key_options(&options(&one), half), cache_key_options(&[], half));
        let _ = std::fs::remove_dir_all(one);
        let _ = std::fs::remove_dir_all(two);
    }
}
