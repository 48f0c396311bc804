//! NVRTC: CUDA C → cubin (or PTX, for inspection) for one architecture. Needs libnvrtc, not
//! a GPU, so CI compiles every kernel the GPU would run.

use std::ffi::{c_char, CStr, CString};

use cudarc::nvrtc::{result, sys};

use crate::headers::{self, IncludeSearch};
use crate::libraries::require_nvrtc;
use crate::{Arch, CompiledKernel, DiskCache, Error, PtxasReport};

/// The NVRTC version as (major, minor), e.g. (13, 0).
pub fn version() -> Result<(u32, u32), Error> {
    require_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-pointers to live integers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|source| Error::Nvrtc { call: "nvrtcVersion", source })?;
    Ok((major as u32, minor as u32))
}

/// The options tessera compiles `source` with: the device's own `sm_XY` (a cubin, not PTX a
/// newer NVRTC might make unloadable) — `sm_90a` on a 9.0 device when the source asks for
/// sm_90a's own instructions (a warp-specialised pipeline's `setmaxnreg`) — ptxas figures in
/// the log, and line info for the sanitizer and profilers. The compiles add the CUDA include
/// folder to these ([`compile_options`]).
///
/// ```
/// use tessera_runtime::{nvrtc, Arch};
/// assert_eq!(nvrtc::options(Arch::SM_90, "__global__ void k() {}")[0], "--gpu-architecture=sm_90");
/// let warp_specialised = "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\nasm(\"setmaxnreg.inc.sync.aligned.u32 232;\");\n#endif";
/// assert_eq!(nvrtc::options(Arch::SM_90, warp_specialised)[0], "--gpu-architecture=sm_90a");
/// assert_eq!(nvrtc::options(Arch::SM_80, warp_specialised)[0], "--gpu-architecture=sm_80");
/// ```
pub fn options(arch: Arch, source: &str) -> Vec<String> {
    let suffix = if arch == Arch::SM_90 && source.contains(SM_90A_FEATURES) { "a" } else { "" };
    vec![
        format!("--gpu-architecture={arch}{suffix}"),
        "--ptxas-options=-v".into(),
        "--std=c++17".into(),
        "-lineinfo".into(),
    ]
}

/// The macro a source tests before using sm_90a's own instructions.
const SM_90A_FEATURES: &str = "__CUDA_ARCH_FEAT_SM90_ALL";

/// Everything a cubin of `source` is compiled with: [`options`], then `--include-path=<dir>`
/// for the CUDA headers' folder when one is found ([`headers`] says where it
/// looks). A source that includes `<cuda_fp16.h>` or `<cuda_bf16.h>` with no folder found is
/// [`Error::CudaHeadersMissing`], naming the folders searched; NVRTC is not run.
pub fn compile_options(source: &str, kernel: &str, arch: Arch) -> Result<Vec<String>, Error> {
    let mut options = options(arch, source);
    options.extend(include_options(source, kernel)?);
    Ok(options)
}

/// The include option for `source`, after loading NVRTC (whose folder is searched last).
fn include_options(source: &str, kernel: &str) -> Result<Vec<String>, Error> {
    version()?;
    IncludeSearch::from_process().include_options(kernel, source)
}

/// Compiles `source` to a cubin for `arch`, looking in `cache` first and storing there after.
pub fn compile_cached(
    source: &str,
    kernel: &str,
    arch: Arch,
    cache: Option<&DiskCache>,
) -> Result<CompiledKernel, Error> {
    let nvrtc_version = version()?;
    let options = compile_options(source, kernel, arch)?;
    // The include folder enters the key as its headers' digest, not its path (and not at all
    // for a source that includes nothing), so keys do not depend on where this machine keeps it.
    let key = cache.map(|c| c.key(source, arch, nvrtc_version, &headers::cache_key_options(&options, source)));
    if let (Some(cache), Some(key)) = (cache, &key) {
        if let Some(found) = cache.load(key, kernel, arch) {
            return Ok(found);
        }
    }
    let compiled = compile_cubin_with(source, kernel, arch, &options)?;
    if let (Some(cache), Some(key)) = (cache, &key) {
        // A cache that cannot be written only costs a recompile next time.
        let _ = cache.store(key, &compiled);
    }
    Ok(compiled)
}

/// Compiles `source` to a cubin for `arch`, with no cache.
///
/// ```no_run
/// let source = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }";
/// let compiled = tessera_runtime::nvrtc::compile_cubin(source, "k", tessera_runtime::Arch::SM_90)?;
/// assert!(!compiled.ptxas.spills());
/// # Ok::<(), tessera_runtime::Error>(())
/// ```
pub fn compile_cubin(source: &str, kernel: &str, arch: Arch) -> Result<CompiledKernel, Error> {
    compile_cubin_with(source, kernel, arch, &compile_options(source, kernel, arch)?)
}

fn compile_cubin_with(source: &str, kernel: &str, arch: Arch, options: &[String]) -> Result<CompiledKernel, Error> {
    let program = Program::compile(source, kernel, arch, options)?;
    let cubin = program.cubin()?;
    let ptxas = PtxasReport::from_log_or_cubin(&program.log, &cubin, kernel);
    Ok(CompiledKernel { name: kernel.into(), arch, cubin, log: program.log.clone(), ptxas, from_disk_cache: false })
}

/// Compiles `source` to PTX for the virtual architecture of `arch` (`compute_90`), to read
/// which instructions the code asks for (`ld.global.nc.v4.f32`, ...).
pub fn compile_ptx(source: &str, kernel: &str, arch: Arch) -> Result<String, Error> {
    // compute_90a where the source asks for sm_90a's own instructions, as the cubin's compile does
    let suffix = if arch == Arch::SM_90 && source.contains(SM_90A_FEATURES) { "a" } else { "" };
    let mut options =
        vec![format!("--gpu-architecture=compute_{}{}{suffix}", arch.major, arch.minor), "--std=c++17".into()];
    options.extend(include_options(source, kernel)?);
    let program = Program::compile(source, kernel, arch, &options)?;
    program.ptx()
}

/// An NVRTC program that is destroyed when dropped.
struct Program {
    handle: sys::nvrtcProgram,
    log: String,
}

impl Program {
    fn compile(source: &str, kernel: &str, arch: Arch, options: &[String]) -> Result<Self, Error> {
        require_nvrtc()?;
        let invalid_nul = |what: &str| Error::Compile {
            kernel: kernel.into(),
            arch: arch.to_string(),
            log: format!("the {what} contains a NUL byte"),
            excerpt: String::new(),
        };
        let c_source = CString::new(source).map_err(|_| invalid_nul("source"))?;
        let c_name = CString::new(format!("{kernel}.cu")).map_err(|_| invalid_nul("kernel name"))?;
        let handle = result::create_program(&c_source, Some(&c_name))
            .map_err(|source| Error::Nvrtc { call: "nvrtcCreateProgram", source })?;
        let mut program = Program { handle, log: String::new() };
        // SAFETY: `handle` is a live program; the options are plain strings.
        let compiled = unsafe { result::compile_program(program.handle, options) };
        // SAFETY: as above; the log exists after a compile, successful or not.
        program.log = unsafe { result::get_program_log(program.handle) }
            .map(|raw| c_chars_to_string(&raw))
            .map_err(|source| Error::Nvrtc { call: "nvrtcGetProgramLog", source })?;
        if compiled.is_err() {
            return Err(Error::Compile {
                kernel: kernel.into(),
                arch: arch.to_string(),
                excerpt: failing_lines(source, &program.log, &format!("{kernel}.cu")),
                log: program.log.trim_end().to_string(),
            });
        }
        Ok(program)
    }

    fn cubin(&self) -> Result<Vec<u8>, Error> {
        let mut size = 0usize;
        // SAFETY: live program, out-pointer to a live integer.
        unsafe { sys::nvrtcGetCUBINSize(self.handle, &mut size) }
            .result()
            .map_err(|source| Error::Nvrtc { call: "nvrtcGetCUBINSize", source })?;
        let mut cubin = vec![0u8; size];
        // SAFETY: the buffer holds exactly `size` bytes, as NVRTC asked.
        unsafe { sys::nvrtcGetCUBIN(self.handle, cubin.as_mut_ptr() as *mut c_char) }
            .result()
            .map_err(|source| Error::Nvrtc { call: "nvrtcGetCUBIN", source })?;
        Ok(cubin)
    }

    fn ptx(&self) -> Result<String, Error> {
        // SAFETY: live program compiled for a virtual architecture.
        unsafe { result::get_ptx(self.handle) }
            .map(|raw| c_chars_to_string(&raw))
            .map_err(|source| Error::Nvrtc { call: "nvrtcGetPTX", source })
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: destroyed once; a failure here leaks a little host memory and nothing else.
        let _ = unsafe { result::destroy_program(self.handle) };
    }
}

fn c_chars_to_string(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(text) => text.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The source lines an NVRTC log complains about (`name.cu(12): error: ...`), two lines of
/// context each side, numbered.
fn failing_lines(source: &str, log: &str, file: &str) -> String {
    let named =
        log.lines().filter_map(|l| l.strip_prefix(file)?.strip_prefix('(')?.split(')').next()?.parse::<usize>().ok());
    crate::excerpt::source_excerpt(source, named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_lines_marks_the_line_the_log_names() {
        let source = "a\nb\nc\nd\ne\nf";
        let log = "k.cu(4): error: identifier \"d\" is undefined\n1 error detected";
        let excerpt = failing_lines(source, log, "k.cu");
        assert!(excerpt.contains(">    4 | d"), "{excerpt}");
        assert!(excerpt.contains("     2 | b"), "{excerpt}");
        assert!(excerpt.contains("     6 | f"), "{excerpt}");
        assert!(!excerpt.contains("| a"), "{excerpt}");
    }
}
