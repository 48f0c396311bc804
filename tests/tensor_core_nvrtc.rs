//! What NVRTC makes of the tensor-core kernels: `mma.sync` and `ldmatrix` in the PTX (`wgmma`
//! for the sm_90a ones), 16-byte global and shared accesses, cp.async where the pipeline has
//! three stages or more, no spills — in CI, with NVRTC and the CUDA headers from PyPI. The SASS
//! (HMMA, LDSM, HGMMA) is read on a GPU machine, where `cuobjdump` comes with the toolkit.

use tessera::catalog::hgemm;
use tessera::{nvrtc, Arch};

fn instructions(ptx: &str) -> Vec<String> {
    ptx.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
}

/// The wgmma kernels: those whose fragment is laid out per warpgroup (`.warpgroup_tile(..)`).
fn is_wgmma(kernel: &tessera::KernelDefinition) -> bool {
    kernel.ir().is_ok_and(|ir| {
        ir.statements().iter().any(|s| matches!(s, tessera::dsl::Statement::Fragment(f) if f.warpgroup_tile.is_some()))
    })
}

/// Whether the kernel's pipeline copies with TMA (`copies = tma`).
fn copies_by_tma(kernel: &tessera::KernelDefinition) -> bool {
    kernel.ir().is_ok_and(|ir| ir.copies_by_tma())
}

/// The N of a wgmma kernel's m64nNk16: its warpgroup tile's width (`WN`; `WM` where the
/// fragment holds Cᵀ).
fn wgmma_n(kernel: &tessera::KernelDefinition) -> i64 {
    let ir = kernel.ir().unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
    let scope = ir.constant_scope();
    ir.statements()
        .iter()
        .find_map(|s| match s {
            tessera::dsl::Statement::Fragment(f) => tessera::dsl::FragmentLayout::with_scope(f, &scope)?.warpgroup_tile,
            _ => None,
        })
        .map(|[_, n]| n)
        .unwrap_or_else(|| panic!("{}: no warpgroup tile", kernel.name()))
}

#[test]
fn the_sm_90a_kernels_multiply_with_wgmma_from_fenced_shared_memory_and_spill_nothing() {
    let kernels: Vec<_> = hgemm::all().filter(|k| is_wgmma(k)).collect();
    assert!(kernels.len() >= 4, "the wgmma rungs of the ladder, BF16 and F16");
    for kernel in kernels {
        let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), Arch::SM_90)
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        let wanted = match kernel.name() {
            name if name.ends_with("bf16") => {
                format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", wgmma_n(kernel))
            }
            name if name.ends_with("f16") => {
                format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.f16.f16", wgmma_n(kernel))
            }
            // TF32 (`gemm_tf32_wgmma_bt`): k8, both operands K-major
            _ => format!("wgmma.mma_async.sync.aligned.m64n{}k8.f32.tf32.tf32", wgmma_n(kernel)),
        };
        assert!(ptx.contains(&wanted), "{}: no {wanted} in the PTX", kernel.name());
        for needed in ["wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned"] {
            assert!(ptx.contains(needed), "{}: no {needed} in the PTX", kernel.name());
        }
        // the tiles reach shared memory through the async proxy wgmma reads by (TMA), or
        // through cp.async, whose writes a proxy fence makes visible to it
        let tma = [
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "mbarrier.arrive.expect_tx.shared::cta.b64",
        ];
        if copies_by_tma(kernel) {
            for needed in tma {
                assert!(ptx.contains(needed), "{}: no {needed} in the PTX", kernel.name());
            }
            assert!(!ptx.contains("cp.async.cg"), "{}: a TMA pipeline issues no cp.async", kernel.name());
        } else {
            assert!(ptx.contains("fence.proxy.async.shared::cta"), "{}: no proxy fence in the PTX", kernel.name());
            assert!(!ptx.contains(tma[0]), "{}: TMA without `copies = tma`", kernel.name());
        }
        assert!(!ptx.contains("ldmatrix"), "{}: wgmma reads shared memory itself, without ldmatrix", kernel.name());
        // `.by_tma()` (V19): C stored by TMA from shared memory, in bulk groups
        let stores_by_tma = kernel.ir().is_ok_and(|ir| ir.tma_store_copy().is_some());
        assert_eq!(
            ptx.contains("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group")
                && ptx.contains("cp.async.bulk.wait_group.read"),
            stores_by_tma,
            "{}: TMA stores exactly where the copy out says `.by_tma()`",
            kernel.name()
        );
        // in clusters (V18) B's panels are multicast, and a stage is freed in every block
        let clustered = kernel.ir().is_ok_and(|ir| ir.cluster_tiles().is_some());
        let multicast =
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster";
        assert_eq!(ptx.contains(multicast), clustered, "{}: TMA multicast exactly in clusters", kernel.name());
        assert_eq!(
            ptx.contains("mbarrier.arrive.shared::cluster.b64") && ptx.contains("barrier.cluster.wait"),
            clustered,
            "{}: remote arrivals and a cluster barrier exactly in clusters",
            kernel.name()
        );
        let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), Arch::SM_90).unwrap();
        assert!(!compiled.ptxas.spills(), "{} spills: {}", kernel.name(), compiled.ptxas);
        assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory", kernel.name());
    }
}

/// The Hopper attention kernels: S = Q·Kᵀ on wgmma from descriptors (m64n{BKV}) and O += P·V on
/// wgmma's register-A form (m64n{D}, A's four registers in braces), K and V by 3-D TMA boxes
/// where the producers copy (batched tensor maps), no spills and no local memory.
#[test]
fn the_hopper_attention_kernels_multiply_with_wgmma_and_load_batched_tiles_by_tma() {
    use tessera::catalog::attention;
    let kernels: Vec<_> = attention::ALL.iter().filter(|k| k.name().contains("wgmma")).collect();
    assert_eq!(
        kernels.len(),
        52,
        "forward on wgmma and wgmma + TMA (head dims 64, 128 and 256), backward's dK, dV and dQ on wgmma (64 and 128 with dK and dV in one kernel, 256 apart); BF16 and F16, causal and not"
    );
    for kernel in kernels {
        let ir = kernel.ir().unwrap();
        let constant =
            |name: &str| ir.constant_scope().get(name).unwrap_or_else(|| panic!("{}: no {name}", kernel.name()));
        let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), Arch::SM_90)
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        let input = if kernel.name().contains("bf16") { "bf16" } else { "f16" };
        let wgmma = |n: i64| format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{input}.{input}");
        let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
        // the instruction and its operands span several lines: A is the operand after the
        // accumulators' closing brace, a descriptor (%rd) or four registers ({%r ..})
        let a_operand = |n: i64| -> Vec<String> {
            let wanted = wgmma(n);
            let mut found = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                if line.starts_with(&wanted) {
                    let rest = lines[i..].iter().take(40).copied().collect::<Vec<_>>().join(" ");
                    let after = rest.split('}').nth(1).unwrap_or_default().trim_start_matches([',', ' ']);
                    found.push(after.chars().take(3).collect());
                }
            }
            found
        };
        // the scores' width: keys (forward, dQ) or queries (dK, dV: Sᵀ has keys on rows)
        let transposed = ["_dk", "_dv"].iter().any(|gradient| kernel.name().contains(gradient));
        let scores = if transposed { constant("BQ") } else { constant("BKV") };
        let s_operands = a_operand(scores);
        assert!(
            s_operands.iter().any(|a| a.starts_with("%rd")),
            "{}: the scores (S = Q·Kᵀ, Sᵀ = K·Qᵀ) and dP from descriptors: {s_operands:?}",
            kernel.name()
        );
        let o_operands = a_operand(constant("D"));
        assert!(
            o_operands.iter().any(|a| a.starts_with("{%r")),
            "{}: P·V (forward), Pᵀ·dO, dSᵀ·Q or dS·K with A in registers: {o_operands:?}",
            kernel.name()
        );
        let tma = "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";
        assert_eq!(
            ptx.contains(tma),
            copies_by_tma(kernel),
            "{}: 3-D TMA boxes exactly where the producers copy",
            kernel.name()
        );
        assert!(!ptx.contains("ldmatrix"), "{}: wgmma reads shared memory itself", kernel.name());
        let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), Arch::SM_90).unwrap();
        assert!(!compiled.ptxas.spills(), "{} spills: {}", kernel.name(), compiled.ptxas);
        assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory", kernel.name());
    }
}

#[test]
fn every_hgemm_kernel_multiplies_with_mma_sync_and_spills_nothing() {
    for kernel in hgemm::all().filter(|k| !is_wgmma(k)) {
        // TMA (and the mbarriers it lands on) is sm_90's; the other mma.sync kernels run on sm_80 too
        let archs: &[Arch] = if copies_by_tma(kernel) { &[Arch::SM_90] } else { &[Arch::SM_80, Arch::SM_90] };
        let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), archs[0])
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        let ops = instructions(&ptx);
        let wanted = match kernel.name() {
            name if name.ends_with("bf16") => "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            name if name.ends_with("f16") => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            _ => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        };
        assert!(ops.iter().any(|op| op == wanted), "{}: no {wanted} in the PTX", kernel.name());
        if kernel.name().ends_with("tf32") {
            // every operand value is rounded to TF32 before it is multiplied
            assert!(ops.iter().any(|op| op == "cvt.rna.tf32.f32"), "{}: no cvt.rna.tf32.f32", kernel.name());
        }
        for &arch in archs {
            let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), arch).unwrap();
            assert!(!compiled.ptxas.spills(), "{} spills on {arch}: {}", kernel.name(), compiled.ptxas);
            assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory on {arch}", kernel.name());
        }
    }
}

#[test]
fn shared_tiles_feed_ldmatrix_and_move_16_bytes_at_a_time() {
    for kernel in hgemm::all().filter(|k| !k.name().starts_with("hgemm_v1") && !is_wgmma(k)) {
        let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), Arch::SM_90).unwrap();
        let ops = instructions(&ptx);
        assert!(
            ops.iter().any(|op| op == "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            "{}: no ldmatrix",
            kernel.name()
        );
        // 16-bit B is stored [k, n] and needs ldmatrix.trans; TF32's B, 32-bit values, is read
        // one element per lane (.trans would split them)
        let transposed_b = ops.iter().any(|op| op == "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
        assert_eq!(transposed_b, !kernel.name().ends_with("tf32"), "{}: ldmatrix.trans for B", kernel.name());
        let pipelined = kernel
            .ir()
            .unwrap()
            .statements()
            .iter()
            .any(|s| matches!(s, tessera::dsl::Statement::Pipeline(p) if p.stages >= 3));
        if pipelined {
            assert!(ops.iter().any(|op| op == "cp.async.cg.shared.global"), "{}: no 16-byte cp.async", kernel.name());
            // no tile passes through registers: the only global loads (C's, for β ≠ 0) come
            // after the pipeline has drained
            let drained = ptx.find("cp.async.wait_group 0;").unwrap_or(0);
            let loads_inside: Vec<&str> =
                ptx[..drained].lines().filter(|line| line.trim_start().starts_with("ld.global")).collect();
            assert!(
                drained > 0 && loads_inside.is_empty(),
                "{}: tiles loaded into registers: {loads_inside:?}",
                kernel.name()
            );
        } else {
            let global: Vec<&String> = ops.iter().filter(|op| op.starts_with("ld.global")).collect();
            assert!(
                global.iter().any(|op| op.contains(".v4.")),
                "{}: tile loads not 128-bit: {global:?}",
                kernel.name()
            );
            let shared: Vec<&String> = ops.iter().filter(|op| op.starts_with("st.shared")).collect();
            assert!(
                !shared.is_empty() && shared.iter().all(|op| op.contains(".v4.")),
                "{}: shared stores not 128-bit: {shared:?}",
                kernel.name()
            );
        }
    }
}

#[test]
fn the_global_fragment_kernel_uses_no_shared_memory() {
    let kernel = &hgemm::hgemm_v1_bf16::KERNEL;
    let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), Arch::SM_80).unwrap();
    assert!(
        !ptx.contains("ldmatrix") && !ptx.contains(".shared"),
        "V1 loads its fragments straight from global memory"
    );
}

/// On a GPU machine: the SASS of every kernel's inner loop holds HMMA (and LDSM where the
/// operands come from shared memory).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_sass_holds_hmma_and_ldsm() {
    let gpu = tessera::Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    for kernel in hgemm::all() {
        let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), gpu.arch()).unwrap();
        let path = std::env::temp_dir().join(format!("{}-{}.cubin", kernel.name(), std::process::id()));
        std::fs::write(&path, &compiled.cubin).unwrap();
        let listing = std::process::Command::new("cuobjdump")
            .arg("-sass")
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("cuobjdump (CUDA toolkit) is needed on the GPU machine: {e}"));
        let _ = std::fs::remove_file(&path);
        let sass = String::from_utf8_lossy(&listing.stdout);
        if is_wgmma(kernel) {
            let hgmma = match kernel.name().contains("tf32") {
                true => format!("HGMMA.64x{}x8.F32.TF32", wgmma_n(kernel)),
                false => format!("HGMMA.64x{}x16.F32", wgmma_n(kernel)),
            };
            assert!(sass.contains(&hgmma), "{}: no {hgmma} in the SASS", kernel.name());
            // TMA loads show as UTMALDG; a cp.async pipeline has none
            assert_eq!(sass.contains("UTMALDG"), copies_by_tma(kernel), "{}: UTMALDG in the SASS", kernel.name());
            continue;
        }
        let hmma = if kernel.name().ends_with("tf32") { "HMMA.1688.F32.TF32" } else { "HMMA.16816.F32" };
        let found: std::collections::BTreeSet<&str> =
            sass.split_whitespace().filter(|word| word.starts_with("HMMA")).collect();
        assert!(sass.contains(hmma), "{}: no {hmma} in the SASS (its HMMAs: {found:?})", kernel.name());
        if !kernel.name().starts_with("hgemm_v1") {
            assert!(sass.contains("LDSM"), "{}: no LDSM in the SASS", kernel.name());
        }
    }
}

/// A launch on rows that are not 16-byte aligned renders the kernel narrower (8, 4 or 2 bytes
/// per cp.async, or one 16-bit element through a register): every width compiles.
#[test]
fn narrower_renderings_for_unaligned_rows_compile() {
    use tessera::dsl::VectorWidth;
    for kernel in [&hgemm::hgemm_v2_bf16::KERNEL, &hgemm::hgemm_v4_bf16::KERNEL, &hgemm::hgemm_v5_f16::KERNEL] {
        for width in [VectorWidth::W4, VectorWidth::W2, VectorWidth::W1] {
            let source =
                kernel.source_with_vector(width).unwrap_or_else(|e| panic!("{} at width {width}: {e}", kernel.name()));
            let compiled = nvrtc::compile_cubin(&source, kernel.name(), Arch::SM_80)
                .unwrap_or_else(|e| panic!("{} at width {width}: {e}", kernel.name()));
            // V5's 128 × 256 tiles copied one element at a time need more registers than its
            // accumulators leave: it spills there, which the bench shows at 4095³
            if kernel.name() != "hgemm_v5_f16" {
                assert!(!compiled.ptxas.spills(), "{} at width {width} spills: {}", kernel.name(), compiled.ptxas);
            }
        }
    }
}
