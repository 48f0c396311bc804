//! 16-bit floats under NVRTC, without a GPU: a source that includes `<cuda_fp16.h>` and
//! `<cuda_bf16.h>` (guarded as tessera emits them) compiles for sm_80 and sm_90 with the
//! headers the runtime finds (`./dev` installs them from PyPI and sets TESSERA_CUDA_INCLUDE),
//! and with none to be found the compile is a typed error naming the folders searched, not
//! NVRTC's "cannot open source file". Like tests/nvrtc.rs these need libnvrtc and fail
//! without it; run them with `./dev test --test half_headers`.

use std::path::PathBuf;

use tessera::runtime::headers::{self, IncludeSearch};
use tessera::{nvrtc, Arch, DiskCache, Error};

/// bf16 and f16 conversions and arithmetic, with the includes as tessera emits them.
const HALF_SOURCE: &str = r#"#ifndef TESSERA_SIM_H
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

extern "C" __global__ void half_axpy(const __half* __restrict__ x, __nv_bfloat16* __restrict__ y, float alpha, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float xf = __half2float(x[i]);
        const float yf = __bfloat162float(y[i]);
        y[i] = __float2bfloat16_rn(alpha * xf + yf);
    }
}

extern "C" __global__ void half_round_trip(const float* __restrict__ x, __half* __restrict__ h, float* __restrict__ y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const __half v = __float2half_rn(x[i]);
        h[i] = __hadd(v, v);
        y[i] = __half2float(h[i]) + __bfloat162float(__float2bfloat16_rn(x[i]));
    }
}
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-half-headers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_half_and_bfloat16_kernel_compiles_for_sm_80_and_sm_90() {
    for arch in [Arch::SM_80, Arch::SM_90] {
        for kernel in ["half_axpy", "half_round_trip"] {
            let compiled =
                nvrtc::compile_cubin(HALF_SOURCE, kernel, arch).unwrap_or_else(|e| panic!("{kernel} for {arch}: {e}"));
            assert!(compiled.cubin.starts_with(b"\x7fELF"), "{kernel} for {arch}: not a cubin");
            assert!(compiled.ptxas.registers > 0, "{kernel} for {arch}: no ptxas figures in:\n{}", compiled.log);
            assert!(!compiled.ptxas.spills(), "{kernel} spills on {arch}: {}", compiled.ptxas);
            let log = compiled.log.to_lowercase();
            assert!(!log.contains("error") && !log.contains("warning"), "{kernel} for {arch}:\n{}", compiled.log);
        }
        let ptx = nvrtc::compile_ptx(HALF_SOURCE, "half_axpy", arch).unwrap_or_else(|e| panic!("PTX for {arch}: {e}"));
        assert!(ptx.contains(".entry half_axpy"), "{ptx}");
        // the conversions are single instructions from sm_80 on
        assert!(ptx.contains("cvt.rn.bf16.f32"), "no f32 → bf16 conversion for {arch}:\n{ptx}");
        assert!(ptx.contains("cvt.f32.f16"), "no f16 → f32 conversion for {arch}:\n{ptx}");
    }
}

#[test]
fn the_compile_passes_the_include_folder_that_holds_cuda_fp16_h() {
    let options = nvrtc::compile_options(HALF_SOURCE, "half_axpy", Arch::SM_90).unwrap();
    let include = options.iter().find_map(|o| o.strip_prefix("--include-path=")).expect("an include option");
    assert!(std::path::Path::new(include).join("cuda_fp16.h").is_file(), "{options:?}");
    assert!(std::path::Path::new(include).join("cuda_bf16.h").is_file(), "{options:?}");
    // the architecture comes first, as before
    assert_eq!(options[0], "--gpu-architecture=sm_90");
}

#[test]
fn the_disk_cache_finds_a_half_kernel_again() {
    let dir = temp_dir("cache");
    let cache = DiskCache::new(&dir);
    let first = nvrtc::compile_cached(HALF_SOURCE, "half_axpy", Arch::SM_90, Some(&cache)).unwrap();
    assert!(!first.from_disk_cache);
    let second = nvrtc::compile_cached(HALF_SOURCE, "half_axpy", Arch::SM_90, Some(&cache)).unwrap();
    assert!(second.from_disk_cache);
    assert_eq!(first.cubin, second.cubin);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_folder_beside_the_loaded_nvrtc_is_searched_last() {
    nvrtc::version().unwrap(); // loads libnvrtc
    let library = headers::loaded_nvrtc_library().expect("libnvrtc is loaded, so its path is known");
    assert!(library.file_name().unwrap().to_string_lossy().starts_with("libnvrtc"), "{}", library.display());
    let library_dir = library.parent().unwrap();
    let search = IncludeSearch::from_env(|_| None, &[], Some(library_dir));
    assert_eq!(search.candidates(), [library_dir.parent().unwrap().join("include")]);
}

#[test]
fn with_no_headers_to_be_found_the_error_names_the_folders_searched() {
    let empty = temp_dir("empty");
    let elsewhere = empty.join("toolkit/include");
    // an injected environment: TESSERA_CUDA_INCLUDE is the empty folder, no toolkit, no NVRTC
    let search = IncludeSearch::from_env(
        |name| (name == "TESSERA_CUDA_INCLUDE").then(|| empty.clone().into_os_string()),
        std::slice::from_ref(&elsewhere),
        None,
    );
    assert_eq!(search.candidates(), [empty.clone(), elsewhere.clone()]);
    assert_eq!(search.find(), None);
    match search.include_options("half_axpy", HALF_SOURCE) {
        Err(error @ Error::CudaHeadersMissing { .. }) => {
            let Error::CudaHeadersMissing { kernel, header, searched } = &error else { unreachable!() };
            assert_eq!((kernel.as_str(), header.as_str()), ("half_axpy", "cuda_fp16.h"));
            assert_eq!(searched, &[empty.clone(), elsewhere.clone()]);
            let message = error.to_string();
            for needed in [
                empty.display().to_string(),
                elsewhere.display().to_string(),
                "nvidia-cuda-runtime".into(),
                "TESSERA_CUDA_INCLUDE".into(),
                "./dev".into(),
            ] {
                assert!(message.contains(&needed), "`{needed}` missing from: {message}");
            }
        }
        other => panic!("expected CudaHeadersMissing, got {other:?}"),
    }
    // a source that includes nothing needs no folder
    let plain = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }";
    assert_eq!(search.include_options("k", plain).unwrap(), Vec::<String>::new());
    // and once the folder holds cuda_fp16.h, it is the one passed
    std::fs::write(empty.join("cuda_fp16.h"), "// stand-in").unwrap();
    assert_eq!(search.include_options("k", plain).unwrap(), vec![format!("--include-path={}", empty.display())]);
    let _ = std::fs::remove_dir_all(empty);
}
