//! Kernels whose shared memory exceeds the 48 KiB a block may declare statically: codegen
//! carves their buffers out of one `extern __shared__` allocation, loading opts the kernel in
//! to that much, each launch passes the size, and a device that allows less is a typed error.
//! The numbers are checked on the CPU simulation (CI) and on a GPU (ignored without one).

mod common;

use common::{gemm_reference, random_floats, relative_error};
use tessera::dsl::{analyze, Occupancy, Target};
use tessera::prelude::*;
use tessera::{nvrtc, Arch, KernelDefinition};

/// SGEMM V6 with BK = 32: 2 stages × (32 × 132 + 32 × 128) × 4 B = 66 560 B of shared memory.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 32, TM = 8, TN = 8))]
pub fn sgemm_bk32(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// A 128 × 128 transpose tile padded by one: 128 × 129 × 4 B = 66 048 B.
#[tile_kernel(threads = 1024, consts(T = 128))]
pub fn transpose_128(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// 200 KiB of shared memory: valid for sm_90 (227 KiB) only, so sm_80, sm_86 and sm_89
/// GPUs refuse it at launch.
#[tile_kernel(threads = 1024, target = sm_90, consts(T = 224))]
pub fn transpose_224(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).pad(4);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

/// A buffer of 94 × 128 f32 (48 128 B, the most buffers may declare statically) beside block
/// reductions whose warp slots are static too: a round of four f64 sums (1 024 B), an f64
/// maximum (256 B) and an f32 one (128 B). The buffer goes to dynamic shared memory, where
/// declared statically beside the slots it would take 49 536 B, over the 48 KiB ptxas allows.
#[tile_kernel(threads = 128, vector = 1)]
pub fn stats_beside_a_full_buffer(x: Global<f64, (R, C)>, y: GlobalMut<f64, (R, C)>) {
    let (row,) = grid(R);
    let t = shared::<f32>([94, 128]);
    let a = x[[row, thread_index()]];
    t[[row % 94, thread_index()]] = a as f32;
    let s1 = block_sum(a);
    let s2 = block_sum(a * 2.0);
    let s3 = block_sum(a * 3.0);
    let s4 = block_sum(a * 4.0);
    let m = block_max(a);
    let n = block_max(t[[row % 94, 127 - thread_index()]]);
    y[[row, thread_index()]] = s1 + s2 + s3 + s4 + m + n as f64;
}

#[test]
fn the_block_reductions_warp_slots_count_against_the_static_limit() {
    let report = analyze(stats_beside_a_full_buffer::KERNEL.ir().unwrap()).unwrap();
    assert_eq!((report.shared_bytes, report.reduction_shared_bytes), (94 * 128 * 4, 4 * 32 * 8 + 32 * 8 + 32 * 4));
    assert!(report.dynamic_shared, "{report}");
    assert!(
        report.to_string().contains("49536 B shared memory (1408 B of it the block reductions' warp slots)"),
        "{report}"
    );
    for arch in [Arch::SM_80, Arch::SM_90] {
        let compiled = nvrtc::compile_cubin(
            stats_beside_a_full_buffer::KERNEL.cuda_source(),
            stats_beside_a_full_buffer::KERNEL.name(),
            arch,
        )
        .unwrap();
        // what ptxas counts static: the warp slots alone
        assert_eq!(compiled.ptxas.shared_bytes, 1408, "{}", compiled.log);
    }
}

on_both_backends!(sgemm_with_66_kib_of_shared_memory_matches_the_reference, transposes_over_48_kib_are_exact);

#[test]
fn buffers_over_48_kib_are_carved_out_of_dynamic_shared_memory() {
    let source = sgemm_bk32::CUDA_SOURCE;
    assert!(source.contains("    extern __shared__ __align__(16) unsigned char tessera_smem[];\n"), "{source}");
    assert!(
        source.contains("float (&a_s)[2][BK][BM + 4] = *reinterpret_cast<float (*)[2][BK][BM + 4]>(tessera_smem + 0);"),
        "{source}"
    );
    // a_s takes 2 × 32 × 132 × 4 = 33 792 bytes, so b_s starts there (a multiple of 16)
    assert!(
        source.contains("float (&b_s)[2][BK][BN] = *reinterpret_cast<float (*)[2][BK][BN]>(tessera_smem + 33792);"),
        "{source}"
    );
    assert!(!source.contains("__shared__ __align__(16) float"), "no static buffer is left: {source}");
    let plan = sgemm_bk32::KERNEL.ir().unwrap().shared_memory();
    assert!(plan.dynamic);
    assert_eq!(plan.bytes, 33_792 + 32_768);
    assert_eq!(plan.dynamic_bytes(), 66_560);
    assert!(sgemm_bk32::REPORT.contains("66560 B shared memory (dynamic: over the 47 KiB of static buffers)"));
}

#[test]
fn catalog_kernels_use_dynamic_shared_memory_exactly_when_over_47_kib() {
    let mut dynamic = Vec::new();
    for kernel in tessera::catalog::all() {
        let plan = kernel.ir().unwrap().shared_memory();
        // 48 KiB less the 1 KiB kept for tessera's own static variables
        let over = plan.bytes > 47 * 1024;
        assert_eq!(plan.dynamic, over, "{}: {} B", kernel.name(), plan.bytes);
        assert_eq!(plan.dynamic_bytes() > 0, over, "{}", kernel.name());
        assert_eq!(kernel.cuda_source().contains("extern __shared__"), over, "{}", kernel.name());
        if over {
            dynamic.push(kernel.name());
        }
    }
    // three 128×128×16 stages (49 920 B) are the catalog's first kernels over the static limit
    assert_eq!(
        dynamic,
        [
            "sgemm_v7",
            "sgemm_v9",
            "sgemm_v10",
            "sgemm_v11",
            "sgemm_v12",
            "sgemm_v13",
            "sgemm_v12_bt",
            "sgemm_v13_bt",
            "hgemm_v4_bf16",
            "hgemm_v5_bf16",
            "hgemm_v6_bf16",
            "hgemm_v7_bf16",
            "hgemm_v8_bf16",
            "hgemm_v9_bf16",
            "hgemm_v10_bf16",
            "hgemm_v11_bf16",
            "hgemm_v12_bf16",
            "hgemm_v13_bf16",
            "hgemm_v14_bf16",
            "hgemm_v15_bf16",
            "hgemm_v16_bf16",
            "hgemm_v17_bf16",
            "hgemm_v18_bf16",
            "hgemm_v19_bf16",
            "hgemm_v20_bf16",
            "hgemm_v21_bf16",
            "hgemm_v4_f16",
            "hgemm_v5_f16",
            "hgemm_v6_f16",
            "hgemm_v7_f16",
            "hgemm_v8_f16",
            "hgemm_v9_f16",
            "hgemm_v10_f16",
            "hgemm_v11_f16",
            "hgemm_v12_f16",
            "hgemm_v13_f16",
            "hgemm_v14_f16",
            "hgemm_v15_f16",
            "hgemm_v16_f16",
            "hgemm_v17_f16",
            "hgemm_v18_f16",
            "hgemm_v19_f16",
            "hgemm_v20_f16",
            "hgemm_v21_f16",
            "hgemm_v11_bf16_to_bf16",
            "hgemm_v11_f16_to_f16",
            "hgemm_v19_bf16_to_bf16",
            "hgemm_v19_f16_to_f16",
            "hgemm_v20_bf16_to_bf16",
            "hgemm_v20_f16_to_f16",
            "hgemm_v21_bf16_to_bf16",
            "hgemm_v21_f16_to_f16",
            "hgemm_v22_bf16_to_bf16",
            "hgemm_v22_f16_to_f16",
            "gemm_tf32",
            "gemm_tf32_wgmma_kn",
            "gemm_tf32_wgmma_kn_64x128",
            "gemm_tf32_wgmma_bt",
            "gemm_tf32_wgmma_bt_64x128",
            "gemm_tf32_wgmma_bt_clusters",
            "hgemm_v11_bt_bf16",
            "hgemm_v11_bt_f16",
            "hgemm_v20_bt_bf16",
            "hgemm_v20_bt_f16",
            "hgemm_v19_bt_bf16_to_bf16",
            "hgemm_v19_bt_f16_to_f16",
            "hgemm_v22_bt_bf16_to_bf16",
            "hgemm_v22_bt_f16_to_f16",
            "sgemm_bias_gelu",
            "sgemm_bias_gelu_stream_k",
            "sgemm_bias_residual",
            "sgemm_bias_relu_residual",
            "hgemm_bias_silu_bf16",
            "hgemm_bias_bf16",
            "hgemm_bias_f16",
            "hgemm_bias_residual_bf16",
            "hgemm_bias_residual_f16",
            "hgemm_bias_residual_small_tiles_bf16",
            "hgemm_bias_residual_small_tiles_f16",
            "hgemm_bias_small_tiles_bf16",
            "hgemm_bias_small_tiles_f16",
            "hgemm_bt_bias_bf16",
            "hgemm_bt_bias_f16",
            "hgemm_bt_bias_small_tiles_bf16",
            "hgemm_bt_bias_small_tiles_f16",
            "hgemm_bt_bias_residual_bf16",
            "hgemm_bt_bias_residual_f16",
            "hgemm_bt_bias_residual_small_tiles_bf16",
            "hgemm_bt_bias_residual_small_tiles_f16",
            "hgemm_bias_gelu_bf16",
            "hgemm_bias_gelu_f16",
            "attention_forward_bf16_d64",
            "attention_forward_bf16_d64_causal",
            "attention_forward_bf16_d128",
            "attention_forward_bf16_d128_causal",
            "attention_forward_f16_d64",
            "attention_forward_f16_d64_causal",
            "attention_forward_f16_d128",
            "attention_forward_f16_d128_causal",
            "attention_backward_dkdv_bf16_d64",
            "attention_backward_dkdv_bf16_d64_causal",
            "attention_backward_dkdv_bf16_d128",
            "attention_backward_dkdv_bf16_d128_causal",
            "attention_backward_dq_bf16_d64_causal",
            "attention_backward_dq_bf16_d128",
            "attention_backward_dq_bf16_d128_causal",
            "attention_backward_dkdv_f16_d64",
            "attention_backward_dkdv_f16_d64_causal",
            "attention_backward_dkdv_f16_d128",
            "attention_backward_dkdv_f16_d128_causal",
            "attention_backward_dq_f16_d64_causal",
            "attention_backward_dq_f16_d128",
            "attention_backward_dq_f16_d128_causal",
            "attention_forward_wgmma_bf16_d64",
            "attention_forward_wgmma_bf16_d64_causal",
            "attention_forward_wgmma_bf16_d128",
            "attention_forward_wgmma_bf16_d128_causal",
            "attention_forward_wgmma_f16_d64",
            "attention_forward_wgmma_f16_d64_causal",
            "attention_forward_wgmma_f16_d128",
            "attention_forward_wgmma_f16_d128_causal",
            "attention_forward_wgmma_tma_bf16_d64",
            "attention_forward_wgmma_tma_bf16_d64_causal",
            "attention_forward_wgmma_tma_bf16_d128",
            "attention_forward_wgmma_tma_bf16_d128_causal",
            "attention_forward_wgmma_tma_f16_d64",
            "attention_forward_wgmma_tma_f16_d64_causal",
            "attention_forward_wgmma_tma_f16_d128",
            "attention_forward_wgmma_tma_f16_d128_causal",
            "attention_backward_wgmma_dkdv_bf16_d64",
            "attention_backward_wgmma_dkdv_bf16_d64_causal",
            "attention_backward_wgmma_dkdv_bf16_d128",
            "attention_backward_wgmma_dkdv_bf16_d128_causal",
            "attention_backward_wgmma_dq_bf16_d64",
            "attention_backward_wgmma_dq_bf16_d64_causal",
            "attention_backward_wgmma_dq_bf16_d128",
            "attention_backward_wgmma_dq_bf16_d128_causal",
            "attention_backward_wgmma_dkdv_f16_d64",
            "attention_backward_wgmma_dkdv_f16_d64_causal",
            "attention_backward_wgmma_dkdv_f16_d128",
            "attention_backward_wgmma_dkdv_f16_d128_causal",
            "attention_backward_wgmma_dq_f16_d64",
            "attention_backward_wgmma_dq_f16_d64_causal",
            "attention_backward_wgmma_dq_f16_d128",
            "attention_backward_wgmma_dq_f16_d128_causal",
            "attention_forward_bf16_d256",
            "attention_forward_bf16_d256_causal",
            "attention_forward_f16_d256",
            "attention_forward_f16_d256_causal",
            "attention_forward_wgmma_bf16_d256",
            "attention_forward_wgmma_bf16_d256_causal",
            "attention_forward_wgmma_f16_d256",
            "attention_forward_wgmma_f16_d256_causal",
            "attention_forward_wgmma_tma_bf16_d256",
            "attention_forward_wgmma_tma_bf16_d256_causal",
            "attention_forward_wgmma_tma_f16_d256",
            "attention_forward_wgmma_tma_f16_d256_causal",
            "attention_backward_wgmma_dk_bf16_d256",
            "attention_backward_wgmma_dk_bf16_d256_causal",
            "attention_backward_wgmma_dv_bf16_d256",
            "attention_backward_wgmma_dv_bf16_d256_causal",
            "attention_backward_wgmma_dq_bf16_d256",
            "attention_backward_wgmma_dq_bf16_d256_causal",
            "attention_backward_wgmma_dk_f16_d256",
            "attention_backward_wgmma_dk_f16_d256_causal",
            "attention_backward_wgmma_dv_f16_d256",
            "attention_backward_wgmma_dv_f16_d256_causal",
            "attention_backward_wgmma_dq_f16_d256",
            "attention_backward_wgmma_dq_f16_d256_causal",
        ]
    );
}

#[test]
fn the_carved_buffers_compile_to_shared_memory_accesses_with_their_vector_widths() {
    for (kernel, vector_loads) in [(&sgemm_bk32::KERNEL, true), (&transpose_128::KERNEL, false)] {
        for arch in [Arch::SM_80, Arch::SM_90] {
            let compiled = nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), arch).unwrap();
            // no static shared memory: it is all dynamic
            assert_eq!(compiled.ptxas.shared_bytes, 0, "{}: {}", kernel.name(), compiled.log);
            assert!(!compiled.ptxas.spills(), "{} spills on {arch}: {}", kernel.name(), compiled.ptxas);
        }
        let ptx = nvrtc::compile_ptx(kernel.cuda_source(), kernel.name(), Arch::SM_90).unwrap();
        let shared: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|op| op.starts_with("ld.shared") || op.starts_with("st.shared"))
            .collect();
        assert!(!shared.is_empty(), "{}: the references lost their address space", kernel.name());
        if vector_loads {
            assert!(shared.contains(&"ld.shared.v4.f32"), "{}: {shared:?}", kernel.name());
            assert!(shared.contains(&"st.shared.v4.f32"), "{}: {shared:?}", kernel.name());
        }
    }
}

#[test]
fn the_report_and_the_occupancy_count_the_dynamic_bytes() {
    let report = analyze(transpose_224::KERNEL.ir().unwrap()).unwrap();
    // 224 × 228 × 4 = 204 288 B
    assert_eq!((report.shared_bytes, report.dynamic_shared), (204_288, true));
    let on = |name: &str| report.occupancy.iter().find(|o| o.target == name).unwrap().blocks_per_sm;
    // sm_90: (204 288 + 1 024) = 205 312 = 1 604 × 128 ≤ 233 472 → 1 block; elsewhere none fits
    assert_eq!((on("sm_90"), on("sm_80"), on("sm_86"), on("sm_89")), (1, 0, 0, 0));
}

fn sgemm_with_66_kib_of_shared_memory_matches_the_reference(device: &Backend) {
    let shapes: &[(usize, usize, usize)] =
        if device.is_simulated() { &[(129, 130, 67), (256, 128, 64)] } else { &[(129, 130, 67), (1000, 1000, 1000)] };
    for &(m, n, k) in shapes {
        let (host_a, host_b, host_c) = (random_floats(m * k, 1), random_floats(k * n, 2), random_floats(m * n, 3));
        let want = gemm_reference(&host_a, &host_b, &host_c, (m, n, k), 1.5, -0.5);
        let a = device.upload(&host_a, [m, k]).unwrap();
        let b = device.upload(&host_b, [k, n]).unwrap();
        let mut c = device.upload(&host_c, [m, n]).unwrap();
        let launched = sgemm_bk32::launch(device, &a, &b, &mut c, 1.5, -0.5).unwrap();
        assert_eq!(launched.dynamic_shared_bytes, 66_560);
        let got = device.download(&c).unwrap();
        let error = relative_error(&got, &want);
        assert!(error < 1e-5, "{m}×{n}×{k}: relative error {error}");
        if let Backend::Gpu(gpu) = device {
            // the driver's occupancy calculator and tessera's agree on the resident blocks
            let target = Target::from_compute_capability(gpu.arch().major, gpu.arch().minor).unwrap();
            let ours = Occupancy::new(&target, 256, 66_560, Some(launched.registers));
            assert_eq!(ours.blocks_per_sm, launched.blocks_per_sm, "{ours:?}");
        }
    }
}

fn transposes_over_48_kib_are_exact(device: &Backend) {
    let (rows, cols) = if device.is_simulated() { (130, 257) } else { (4099, 1029) };
    let host = random_floats(rows * cols, 7);
    let want: Vec<f32> = (0..cols * rows).map(|i| host[(i % rows) * cols + i / rows]).collect();
    let x = device.upload(&host, [rows, cols]).unwrap();
    let mut y = device.zeros::<f32>([cols, rows]).unwrap();
    let launched = transpose_128::launch(device, &x, &mut y).unwrap();
    assert_eq!(launched.dynamic_shared_bytes, 128 * 129 * 4);
    assert_eq!(device.download(&y).unwrap(), want);

    // 204 288 B: only an sm_90 GPU (or the simulation) takes it
    let mut y = device.zeros::<f32>([cols, rows]).unwrap();
    match (transpose_224::launch(device, &x, &mut y), device) {
        (Ok(_), _) => assert_eq!(device.download(&y).unwrap(), want),
        (Err(Error::SharedMemoryOverDevice { bytes, device_max, .. }), Backend::Gpu(gpu)) => {
            assert_eq!(bytes, 204_288);
            assert_eq!(device_max, gpu.max_shared_memory_per_block_optin());
            assert!(device_max < bytes);
        }
        (Err(other), _) => panic!("{other}"),
    }
}

/// The IR of `transpose_224` with a 256 × 256 tile: 256 × 260 × 4 = 266 240 B, more than any
/// GPU allows. Validation refuses such a kernel at compile time, so the test builds the
/// definition by hand (the source is never compiled: the launch refuses first).
fn over_every_device() -> KernelDefinition {
    let mut ir = transpose_224::KERNEL.ir().unwrap().clone();
    for constant in &mut ir.config.constants {
        constant.value = 256;
    }
    let json: &'static str = Box::leak(serde_json::to_string(&ir).unwrap().into_boxed_str());
    KernelDefinition::new("transpose_224", transpose_224::CUDA_SOURCE, json)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shared_memory_over_the_devices_maximum_is_a_typed_error_before_anything_compiles() {
    let gpu = Gpu::new(0).unwrap();
    let target = Target::from_compute_capability(gpu.arch().major, gpu.arch().minor).unwrap();
    assert_eq!(gpu.max_shared_memory_per_block_optin(), target.opt_in_shared_memory_bytes, "the table is right");
    let x = gpu.upload(&random_floats(512 * 512, 1), [512, 512]).unwrap();
    let mut y = gpu.zeros::<f32>([512, 512]).unwrap();
    let definition = over_every_device();
    let error = definition
        .launch(&gpu, &mut [tessera::Argument::input("x", &x), tessera::Argument::output("y", &mut y)])
        .unwrap_err();
    match &error {
        Error::SharedMemoryOverDevice { kernel, bytes, device_max, device } => {
            assert_eq!((kernel.as_str(), *bytes), ("transpose_224", 266_240));
            assert_eq!(*device_max, gpu.max_shared_memory_per_block_optin());
            assert_eq!(*device, gpu.arch().to_string());
        }
        other => panic!("expected SharedMemoryOverDevice, got {other}"),
    }
    assert!(error
        .to_string()
        .contains(&format!("266240 B, exceeds the {} B", gpu.max_shared_memory_per_block_optin())));
}
