//! What NVRTC makes of the emitted CUDA, without a GPU: every kernel compiles to sm_80 and
//! sm_90 cubins without spills, and each vector width shows up as the accesses it promises.
//! These need libnvrtc (CI installs it from PyPI); without it they fail, they never skip.

use tessera::catalog::{self, copy, reduce, transpose};
use tessera::dsl::VectorWidth;
use tessera::{nvrtc, Arch, DiskCache, Error};

/// sm_80 and sm_90; sm_90 alone for a kernel whose pipeline has producers (mbarrier waits by
/// phase, setmaxnreg: sm_90 instructions, which validation requires `target = sm_90` for) or
/// that declares `target = sm_90` (thread-block clusters).
fn architectures(kernel: &tessera::KernelDefinition) -> Vec<Arch> {
    match kernel.ir().map(|ir| (ir.producer_threads(), ir.config.target.unwrap_or(0))) {
        Ok((0, target)) if target < 90 => vec![Arch::SM_80, Arch::SM_90],
        _ => vec![Arch::SM_90],
    }
}

#[test]
fn every_catalog_kernel_compiles_for_sm_80_and_sm_90_without_spills() {
    for kernel in catalog::all() {
        for arch in architectures(kernel) {
            let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name()));
            assert!(!compiled.cubin.is_empty());
            assert!(compiled.ptxas.registers > 0, "no ptxas figures for {} in:\n{}", kernel.name(), compiled.log);
            assert!(!compiled.ptxas.spills(), "{} spills on {arch}: {}", kernel.name(), compiled.ptxas);
            assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory on {arch}", kernel.name());
        }
    }
}

fn ptx(source: &str, name: &str) -> String {
    nvrtc::compile_ptx(source, name, Arch::SM_90).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The PTX instructions of one state space, e.g. "ld.global.nc.v4.f32".
fn accesses(ptx: &str, space: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|op| op.starts_with(&format!("ld.{space}")) || op.starts_with(&format!("st.{space}")))
        .map(str::to_owned)
        .collect()
}

fn global_accesses(ptx: &str) -> Vec<String> {
    accesses(ptx, "global")
}

#[test]
fn shared_memory_accesses_are_128_bit_exactly_where_the_layout_allows() {
    // unpadded f32x4 tiles: 128-bit shared stores, scalar column reads
    for kernel in [&transpose::transpose_f32x4_shared::KERNEL, &transpose::transpose_f32x4_conflict_free::KERNEL] {
        let shared = accesses(&ptx(kernel.cuda_source(), kernel.name()), "shared");
        assert!(shared.iter().any(|a| a == "st.shared.v4.f32"), "{}: {shared:?}", kernel.name());
        assert!(
            shared.iter().filter(|a| a.starts_with("ld.")).all(|a| a == "ld.shared.f32"),
            "{}: {shared:?}",
            kernel.name()
        );
    }
    // padding by one element breaks the 16-byte alignment of the rows: scalar only
    let kernel = &transpose::transpose_f32x4_padded::KERNEL;
    let shared = accesses(&ptx(kernel.cuda_source(), kernel.name()), "shared");
    assert!(!shared.is_empty() && shared.iter().all(|a| !a.contains(".v")), "{shared:?}");
    // and the float4 global side stays 128-bit in all three
    for kernel in [&transpose::transpose_f32x4_shared::KERNEL, &transpose::transpose_f32x4_padded::KERNEL] {
        let global = global_accesses(&ptx(kernel.cuda_source(), kernel.name()));
        assert!(
            global.iter().any(|a| a == "ld.global.nc.v4.f32") && global.iter().any(|a| a == "st.global.v4.f32"),
            "{global:?}"
        );
    }
}

#[test]
fn width_4_moves_whole_tiles_with_128_bit_loads_and_stores() {
    for kernel in [&copy::copy_f32x4::KERNEL, &copy::copy_f32x4_grid_stride::KERNEL] {
        let accesses = global_accesses(&ptx(kernel.cuda_source(), kernel.name()));
        assert!(
            accesses.iter().any(|a| a.starts_with("ld.global") && a.ends_with(".v4.f32")),
            "{}: {accesses:?}",
            kernel.name()
        );
        assert!(
            accesses.iter().any(|a| a.starts_with("st.global") && a.ends_with(".v4.f32")),
            "{}: {accesses:?}",
            kernel.name()
        );
    }
}

#[test]
fn the_reductions_read_with_128_bit_loads_and_reduce_warps_with_a_shfl_xor_butterfly() {
    for kernel in [&reduce::sum_partials_f32::KERNEL, &reduce::dot_partials_f32::KERNEL] {
        let ptx = ptx(kernel.cuda_source(), kernel.name());
        let accesses = global_accesses(&ptx);
        assert!(
            accesses.iter().any(|a| a.starts_with("ld.global") && a.ends_with(".v4.f32")),
            "{}: {accesses:?}",
            kernel.name()
        );
        assert!(ptx.contains("shfl.sync.bfly.b32"), "{}: no butterfly warp shuffle in the PTX", kernel.name());
    }
    // at width 1 (unaligned input) `x.vector(i)` is a scalar load
    let narrower = reduce::sum_partials_f32::KERNEL.source_with_vector(VectorWidth::W1).unwrap();
    let accesses = global_accesses(&ptx(&narrower, "sum_partials_f32"));
    assert!(accesses.iter().any(|a| a.starts_with("ld.global")), "no global load: {accesses:?}");
    assert!(accesses.iter().all(|a| !a.contains(".v2") && !a.contains(".v4")), "{accesses:?}");
}

#[test]
fn width_2_uses_64_bit_accesses_and_width_1_only_scalar_ones() {
    for kernel in [&copy::copy_f32x2::KERNEL, &copy::copy_f32x2_grid_stride::KERNEL] {
        let accesses = global_accesses(&ptx(kernel.cuda_source(), kernel.name()));
        assert!(
            accesses.iter().any(|a| a.starts_with("ld.global") && a.ends_with(".v2.f32")),
            "{}: {accesses:?}",
            kernel.name()
        );
        assert!(!accesses.iter().any(|a| a.contains(".v4")), "{}: {accesses:?}", kernel.name());
    }
    for kernel in [&copy::copy_f32::KERNEL, &copy::copy_f32_grid_stride::KERNEL] {
        let accesses = global_accesses(&ptx(kernel.cuda_source(), kernel.name()));
        assert!(!accesses.is_empty());
        assert!(accesses.iter().all(|a| !a.contains(".v2") && !a.contains(".v4")), "{}: {accesses:?}", kernel.name());
    }
}

#[test]
fn the_narrower_fallback_of_a_width_4_kernel_has_no_128_bit_access() {
    let kernel = &copy::copy_f32x4::KERNEL;
    for width in [VectorWidth::W2, VectorWidth::W1] {
        let source = kernel.source_with_vector(width).unwrap();
        let accesses = global_accesses(&ptx(&source, kernel.name()));
        assert!(accesses.iter().any(|a| a.starts_with("ld.global")), "width {width}: no global load: {accesses:?}");
        assert!(accesses.iter().all(|a| !a.contains(".v4")), "width {width}: {accesses:?}");
        if width == VectorWidth::W2 {
            assert!(accesses.iter().any(|a| a.ends_with(".v2.f32")), "width 2 without a 64-bit access: {accesses:?}");
        }
    }
}

#[test]
fn a_compile_error_carries_the_nvrtc_log_and_the_failing_line() {
    let source = "extern \"C\" __global__ void broken(float* y)\n{\n    y[threadIdx.x] = undefined_name;\n}\n";
    match nvrtc::compile_cubin(source, "broken", Arch::SM_90) {
        Err(Error::Compile { log, excerpt, arch, .. }) => {
            assert_eq!(arch, "sm_90");
            assert!(log.contains("undefined_name"), "{log}");
            assert!(excerpt.contains(">    3 |     y[threadIdx.x] = undefined_name;"), "{excerpt}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn the_disk_cache_returns_the_same_cubin_and_rebuilds_a_damaged_entry() {
    let dir = std::env::temp_dir().join(format!("tessera-nvrtc-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = DiskCache::new(&dir);
    let kernel = &copy::copy_f32x4::KERNEL;
    let first = nvrtc::compile_cached(kernel.cuda_source(), kernel.name(), Arch::SM_90, Some(&cache)).unwrap();
    assert!(!first.from_disk_cache);
    let second = nvrtc::compile_cached(kernel.cuda_source(), kernel.name(), Arch::SM_90, Some(&cache)).unwrap();
    assert!(second.from_disk_cache);
    assert_eq!(first.cubin, second.cubin);
    assert_eq!(first.ptxas, second.ptxas);

    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() - 100;
        bytes[middle] ^= 0x55;
        std::fs::write(&path, bytes).unwrap();
    }
    let rebuilt = nvrtc::compile_cached(kernel.cuda_source(), kernel.name(), Arch::SM_90, Some(&cache)).unwrap();
    assert!(!rebuilt.from_disk_cache, "a damaged entry was trusted");
    assert_eq!(rebuilt.cubin, first.cubin);
}

#[test]
fn nvrtc_reports_its_version() {
    let (major, _) = nvrtc::version().unwrap();
    assert!(major >= 12, "NVRTC {major}");
}

#[test]
fn the_cubin_records_the_same_registers_and_frame_as_the_ptxas_log() {
    // a kernel with local memory (a dynamically indexed array) beside the catalog
    let local = "extern \"C\" __global__ void local_array(float* y, int k) {\n    float a[256];\n    for (int i = 0; i < 256; ++i) a[(i * k) & 255] = y[i];\n    y[threadIdx.x] = a[(threadIdx.x * k) & 255];\n}\n";
    let mut cases: Vec<(String, String, Vec<Arch>)> =
        catalog::all().iter().map(|k| (k.cuda_source().to_string(), k.name().to_string(), architectures(k))).collect();
    cases.push((local.to_string(), "local_array".to_string(), vec![Arch::SM_80, Arch::SM_90]));
    for (source, name, archs) in &cases {
        for &arch in archs {
            let compiled = nvrtc::compile_cubin(source, name, arch).unwrap();
            let figures = tessera::runtime::cubin_figures(&compiled.cubin, name)
                .unwrap_or_else(|| panic!("{name}: no figures in the cubin"));
            let log = tessera::PtxasReport::parse(&compiled.log, name)
                .unwrap_or_else(|| panic!("{name}: no ptxas figures in:\n{}", compiled.log));
            assert_eq!(figures.registers, log.registers, "{name} on {arch}");
            assert_eq!(figures.stack_frame_bytes, log.stack_frame_bytes, "{name} on {arch}");
            if name == "local_array" {
                assert!(figures.stack_frame_bytes >= 256, "{name}: {figures:?}");
            }
        }
    }
}

#[test]
fn sgemm_v2_and_v3_read_their_register_tiles_with_128_bit_shared_loads_only() {
    use tessera::catalog::sgemm;
    let shared_loads = |kernel: &tessera::KernelDefinition| -> Vec<String> {
        accesses(&ptx(kernel.cuda_source(), kernel.name()), "shared")
            .into_iter()
            .filter(|a| a.starts_with("ld."))
            .collect()
    };
    for kernel in
        [&sgemm::sgemm_v2::KERNEL, &sgemm::sgemm_v3::KERNEL, &sgemm::sgemm_v6::KERNEL, &sgemm::sgemm_v7::KERNEL]
    {
        let loads = shared_loads(kernel);
        assert!(!loads.is_empty() && loads.iter().all(|l| l == "ld.shared.v4.f32"), "{}: {loads:?}", kernel.name());
    }
    // (V1's column reads of A are vectorized too: NVRTC loads a_s[m][kk..kk + 3] across the
    // unrolled k-loop. What V2 removes there is the bank conflict, which the analyzer shows.)
}

#[test]
fn sgemm_v7_moves_its_tiles_with_cp_async_only_and_keeps_two_groups_in_flight() {
    use tessera::catalog::sgemm;
    let kernel = &sgemm::sgemm_v7::KERNEL;
    let ptx = ptx(kernel.cuda_source(), kernel.name());
    let instructions: Vec<&str> = ptx.lines().filter_map(|line| line.split_whitespace().next()).collect();
    // B's rows: one 16-byte copy per item; A (transposed in shared memory): 4-byte copies
    assert!(instructions.contains(&"cp.async.cg.shared.global"), "no 16-byte cp.async");
    assert!(instructions.contains(&"cp.async.ca.shared.global"), "no 4-byte cp.async");
    assert!(ptx.contains("cp.async.wait_group 1;"), "3 stages: wait until one group is left in flight");
    assert!(instructions.contains(&"cp.async.commit_group;"));
    // no tile passes through registers: every global load comes after the pipeline has
    // drained (C's, for β ≠ 0), none inside it
    let drained = ptx.find("cp.async.wait_group 0;").unwrap_or(0);
    let loads_inside =
        ptx[..drained].lines().filter(|line| line.trim_start().starts_with("ld.global")).collect::<Vec<_>>();
    assert!(drained > 0 && loads_inside.is_empty(), "A and B loaded into registers: {loads_inside:?}");
    assert!(ptx[drained..].lines().any(|line| line.trim_start().starts_with("ld.global")), "C is read after it");
}
