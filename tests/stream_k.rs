//! `grid(..).stream_k()` (sgemm_v12): tiles split between blocks are summed exactly once, in
//! the same order whichever block finishes last; the grid is what stays resident; K = 0 still
//! scales C by β. Simulated with 2 to 5 resident blocks (every mix of whole and split tiles),
//! and on a GPU with `cargo test --release --test stream_k -- --include-ignored`; the same for
//! a BF16 tensor-core kernel (`mma.sync` warp tiles).

mod common;

use common::{gemm_reference, random_floats, relative_error};
use tessera::catalog::sgemm::sgemm_v12;
use tessera::half::bf16;
use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(
    split_tiles_match_an_f64_reference,
    k_zero_scales_c_by_beta,
    tensor_core_split_tiles_match_an_f64_reference
);

fn simulator_with(blocks: u32) -> Backend {
    common::simulator_with_resident_blocks(blocks, 0x5eed)
}

/// `sgemm_v12` at (m, n, k) against f64, twice with the same bits.
fn check(gpu: &Backend, shape: (usize, usize, usize), seed: u64) {
    check_with(gpu, shape, seed, |v| v, |v| v, sgemm_v12::launch);
}

/// `hgemm_stream_k_bf16` at (m, n, k) against f64 from the same bf16-rounded inputs, twice
/// with the same bits.
fn check_tensor_core(gpu: &Backend, shape: (usize, usize, usize), seed: u64) {
    check_with(gpu, shape, seed, bf16::from_f32, bf16::to_f32, |gpu, a, b, c, alpha, beta| {
        hgemm_stream_k_bf16::launch(gpu, a, b, c, alpha, beta)
    });
}

/// C = α·A·B + β·C by `launch` on inputs rounded by `round` against f64 from the rounded
/// values; a second launch adds the shares in the same order: the same bits.
fn check_with<T: tessera::runtime::Element>(
    gpu: &Backend,
    (m, n, k): (usize, usize, usize),
    seed: u64,
    round: fn(f32) -> T,
    widen: fn(T) -> f32,
    launch: impl Fn(
        &Backend,
        &tessera::DeviceTensor<T>,
        &tessera::DeviceTensor<T>,
        &mut tessera::DeviceTensor<f32>,
        f32,
        f32,
    ) -> Result<tessera::Launched, tessera::Error>,
) {
    let rounded = |values: Vec<f32>| values.into_iter().map(round).collect::<Vec<T>>();
    let (host_a, host_b) = (rounded(random_floats(m * k, seed)), rounded(random_floats(k * n, seed + 1)));
    let host_c = random_floats(m * n, seed + 2);
    let exact = |values: &[T]| values.iter().map(|&v| widen(v)).collect::<Vec<f32>>();
    let (alpha, beta) = (1.25f32, -0.75f32);
    let want = gemm_reference(&exact(&host_a), &exact(&host_b), &host_c, (m, n, k), f64::from(alpha), f64::from(beta));
    let a = gpu.upload(&host_a, [m, k]).unwrap();
    let b = gpu.upload(&host_b, [k, n]).unwrap();
    let mut c = gpu.upload(&host_c, [m, n]).unwrap();
    launch(gpu, &a, &b, &mut c, alpha, beta).unwrap();
    let got = gpu.download(&c).unwrap();
    let error = relative_error(&got, &want);
    assert!(error < 1e-5, "M={m} N={n} K={k}: relative error {error:e}");
    let mut again = gpu.upload(&host_c, [m, n]).unwrap();
    launch(gpu, &a, &b, &mut again, alpha, beta).unwrap();
    assert_eq!(got, gpu.download(&again).unwrap(), "M={m} N={n} K={k}: a second launch summed differently");
}

fn split_tiles_match_an_f64_reference(gpu: &Backend) {
    // 6 tiles of 128 × 256: split between every block when fewer than 6 are resident (or
    // when, on a GPU, 42 k-tiles of work meet 132 SMs); tails in M, N and K
    check(gpu, (300, 300, 200), 1);
    check(gpu, (257, 511, 97), 2);
    if !gpu.is_simulated() {
        for (index, &shape) in
            [(1000, 1000, 1000), (4097, 4095, 1023), (1024, 4096, 4096), (129, 8192, 2048)].iter().enumerate()
        {
            check(gpu, shape, 10 + index as u64);
        }
    }
}

fn k_zero_scales_c_by_beta(gpu: &Backend) {
    let (m, n) = (130, 260);
    let host_c = random_floats(m * n, 9);
    let a = gpu.upload(&[0.0f32; 0], [m, 0]).unwrap();
    let b = gpu.upload(&[0.0f32; 0], [0, n]).unwrap();
    let mut c = gpu.upload(&host_c, [m, n]).unwrap();
    sgemm_v12::launch(gpu, &a, &b, &mut c, 2.0, 0.5).unwrap();
    let want: Vec<f32> = host_c.iter().map(|v| 0.5 * v).collect();
    assert_eq!(gpu.download(&c).unwrap(), want);
}

fn tensor_core_split_tiles_match_an_f64_reference(gpu: &Backend) {
    // 9 tiles of 128 × 128, 7 k-tiles each; tails in M, N and K
    check_tensor_core(gpu, (300, 300, 200), 31);
    if !gpu.is_simulated() {
        for (index, &shape) in [(1000, 1000, 1000), (4097, 4095, 1023), (129, 8192, 2048)].iter().enumerate() {
            check_tensor_core(gpu, shape, 40 + index as u64);
        }
    }
}

/// The workspace's counters are zeroed only where the kernel that used them last did not leave
/// them zero: a causal attention forward takes its tiles from a counter (`.dynamic()`), which
/// ends at the tile count, and a stream-K GEMM after it on the same GPU must still find its
/// counters zero — so must one after another stream-K GEMM of another tile size.
#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_k_after_a_dynamic_grid_and_another_stream_k_kernel_finds_its_counters_zero() {
    let gpu = common::gpu();
    check(&gpu, (1000, 1000, 1000), 70);
    let one = bf16::from_f32(0.5);
    let (batch, heads, seq, head_dim) = (1, 8, 2048, 64);
    let q = gpu.upload(&vec![one; batch * heads * seq * head_dim], [batch, heads, seq, head_dim]).unwrap();
    let mut o = gpu.zeros::<bf16>([batch, heads, seq, head_dim]).unwrap();
    let mut lse = gpu.zeros::<f32>([batch, heads, seq]).unwrap();
    let launched = tessera::catalog::attention::forward(&gpu, &q, &q, &q, &mut o, &mut lse, true).unwrap();
    check(&gpu, (1000, 1000, 1000), 71);
    check_tensor_core(&gpu, (1000, 1000, 1000), 72);
    check(&gpu, (4097, 4095, 1023), 73);
    // the counter came from the attention kernel's dynamic grid
    let ran = tessera::catalog::find(launched.kernel).unwrap();
    assert!(ran.ir().unwrap().grid().is_some_and(|g| g.dynamic), "{} takes no tiles from a counter", launched.kernel);
}

/// With 2 resident blocks, 6 tiles are two full rounds of one tile per block, then two tiles
/// split between the two blocks; with 3 and 6 the tiles divide evenly (one per block); with 4
/// and 5, every tile is split. Each mix matches the reference.
#[test]
fn every_mix_of_whole_and_split_tiles_matches_the_reference() {
    for blocks in [2, 3, 4, 5, 6] {
        let sim = simulator_with(blocks);
        check(&sim, (300, 300, 200), 20 + u64::from(blocks));
    }
}

/// The same mixes for the tensor-core kernel, whose shares are `mma.sync` accumulators (9
/// tiles: with 2, 4 or 5 blocks some are split, with 3 none).
#[test]
fn every_mix_of_whole_and_split_tensor_core_tiles_matches_the_reference() {
    for blocks in [2, 3, 4, 5] {
        check_tensor_core(&simulator_with(blocks), (300, 300, 200), 50 + u64::from(blocks));
    }
}

#[test]
fn the_grid_is_what_stays_resident_capped_by_the_k_tiles_of_work() {
    let sim = simulator_with(5);
    let (m, n, k) = (300, 300, 64); // 6 tiles of 2 k-tiles: 12 units of work
    let a = sim.upload(&random_floats(m * k, 3), [m, k]).unwrap();
    let b = sim.upload(&random_floats(k * n, 4), [k, n]).unwrap();
    let mut c = sim.zeros::<f32>([m, n]).unwrap();
    assert_eq!(sgemm_v12::launch(&sim, &a, &b, &mut c, 1.0, 0.0).unwrap().grid, [5, 1, 1]);
    let sim = simulator_with(64);
    assert_eq!(sgemm_v12::launch(&sim, &a, &b, &mut c, 1.0, 0.0).unwrap().grid, [12, 1, 1]);
}

/// A BF16 tensor-core GEMM under stream-K: HGEMM V4's tiles and pipeline (mma.sync +
/// ldmatrix) with its tiles' k loops split between the resident blocks. One block an SM: at
/// two, the 128 registers each thread may hold leave NVRTC 13.0's ptxas 4 bytes short.
#[tile_kernel(threads = 256, vector = 8, min_blocks = 1, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
fn hgemm_stream_k_bf16(
    a: Global<bf16, (M, K)>,
    b: Global<bf16, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).stream_k();
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(64);
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// The fix-up reads and writes the accumulators through a flat view of their registers; ptxas
/// keeps them in registers (no local memory) for both fragment kinds.
#[test]
fn the_fixup_keeps_the_accumulators_in_registers() {
    for kernel in [&sgemm_v12::KERNEL, &hgemm_stream_k_bf16::KERNEL] {
        for arch in [tessera::Arch::SM_80, tessera::Arch::SM_90] {
            let compiled = tessera::nvrtc::compile_cubin(kernel.cuda_source(), kernel.name(), arch).unwrap();
            assert!(!compiled.ptxas.spills(), "{} spills on {arch}: {}", kernel.name(), compiled.ptxas);
            assert_eq!(compiled.ptxas.stack_frame_bytes, 0, "{} uses local memory on {arch}", kernel.name());
        }
    }
}
