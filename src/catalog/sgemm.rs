//! The SGEMM family of seeds/004: C = α·A·B + β·C, row-major f32, any M, N, K.
//!
//! naive → V1 (128×128 block tiles through shared memory, 8×8 register tiles) → V2 (A stored
//! transposed in shared memory and the thread tile split in four, so every shared read is a
//! conflict-free 128-bit load) → V3 (`stages = 2`: the next tiles are fetched into registers
//! while this one is computed). Each kernel is its predecessor plus one idea; past the note:
//! V4 warp tiling, V5 BK = 16 with two blocks per SM, V6 A's rows padded, V7 a 3-stage
//! cp.async pipeline, V8 V7 on cuBLAS's own tile shape, V9 V7 with double-buffered fragments,
//! V10 V9 on the tuner's best tiles for 4096³ on an H200, V11 V10 with the k loop unrolled 8
//! steps at a time and the next tile's copies spread over those trips, V12 V11 under stream-K.

use crate::prelude::*;

/// Naive: one thread per element of C, reading A and B straight from global memory.
#[tile_kernel(threads = (16, 16), consts(BM = 16, BN = 16))]
pub fn sgemm_naive(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([1, 1]);
    for k in pipeline(0..K, stages = 1) {
        mma(a.tile([by, k], [BM, 1]), b.tile([k, bx], [1, BN]), &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V1: 128×128×8 tiles of A and B in shared memory, an 8×8 tile of C in each thread's registers.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8))]
pub fn sgemm_v1(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V2: A transposed in shared memory and the 8×8 thread tile split into four 4×4 tiles half
/// a block apart: each thread's values of A and B are two 128-bit loads each, conflict-free.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8))]
pub fn sgemm_v2(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V3: V2 double-buffered — tile k + 1 travels from global memory into registers while tile
/// k is multiplied, one barrier per tile.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8))]
pub fn sgemm_v3(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]);
    for k in pipeline(0..cdiv(K, BK), stages = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V4: V3 with warp tiling — each warp's 32 threads hold a 4 × 8 block of thread tiles
/// instead of 2 × 16, so a warp's b reads span one 128-byte wavefront instead of two.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8))]
pub fn sgemm_v4(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V5: V4 with BK = 16 — twice the work per barrier and per prefetch — holding registers to
/// 128 so two blocks stay resident per SM.
#[tile_kernel(threads = 256, vector = 4, min_blocks = 2, consts(BM = 128, BN = 128, BK = 16, TM = 8, TN = 8))]
pub fn sgemm_v5(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V6: V5 with A's shared rows padded by 4 — the transposed stores of A become conflict-free
/// at every vector width, and the mma's 128-bit reads stay aligned.
#[tile_kernel(threads = 256, vector = 4, min_blocks = 2, consts(BM = 128, BN = 128, BK = 16, TM = 8, TN = 8))]
pub fn sgemm_v6(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
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

/// V7: V6 with a 3-stage cp.async pipeline — two tiles travel straight from global to shared
/// memory while one is computed, and no registers hold them on the way.
#[tile_kernel(threads = 256, vector = 4, min_blocks = 2, consts(BM = 128, BN = 128, BK = 16, TM = 8, TN = 8))]
pub fn sgemm_v7(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V8: V7 on the tiles cuBLAS picks for large FP32 GEMMs on sm_90 (its kernel name says
/// `tilesize256x128x8_stage3_warpsize4x2x1`): 256×128 block tiles, BK = 8, 16×8 thread tiles
/// (64×64 per warp), 3 stages, one block per SM holding all the registers it wants.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 256, BN = 128, BK = 8, TM = 16, TN = 8))]
pub fn sgemm_v8(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V9: V7 with double-buffered fragments — step kk + 1's values of A and B come from shared
/// memory into a second set of registers while step kk's are multiplied.
#[tile_kernel(threads = 256, vector = 4, min_blocks = 2, consts(BM = 128, BN = 128, BK = 16, TM = 8, TN = 8))]
pub fn sgemm_v9(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments();
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V10: V9 on the configuration `tessera tune` found fastest for 4096³ on an H200 — 128×256
/// block tiles 32 deep, 16×8 thread tiles (253 registers, one block per SM) and three 49.7 KiB
/// stages: 149 KiB of shared memory, which only sm_80 and sm_90 hold.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v10(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments();
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V11: V10 with the k loop unrolled 8 steps at a time instead of all 32 — 1024 FFMAs per trip
/// instead of 4096, so the loop stays in the instruction cache — and the next tile's copies
/// issued in four parts, one per trip, so they never queue up behind each other.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v11(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V12: V11 under stream-K — as many blocks as stay resident share the tiles' k loops, so the
/// last round of tiles no longer leaves SMs idle (4096² has 512 tiles for 132 SMs: 3.9 rounds).
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v12(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).stream_k();
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V13: V11 with its copies taken off the compute threads — 128 more threads (a warpgroup) only
/// issue the cp.async copies, stage by stage as the compute threads free them (mbarriers, no
/// block-wide barrier per tile), and give most of their registers to the 256 that multiply
/// (`setmaxnreg`, sm_90a). The k loop is FFMAs and shared loads only.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v13(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// V6 on 128×64 block tiles of 128 threads: twice the blocks of V6, for shapes that leave
/// SMs idle with 128×128 tiles.
#[tile_kernel(threads = 128, vector = 4, consts(BM = 128, BN = 64, BK = 16, TM = 8, TN = 8))]
pub fn sgemm_v6_128x64(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
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

/// V4 on 64×64 block tiles of 64 threads: four times the blocks, for shapes too small to
/// fill the GPU with 128×128 tiles.
#[tile_kernel(threads = 64, vector = 4, consts(BM = 64, BN = 64, BK = 8, TM = 8, TN = 8))]
pub fn sgemm_v4_small(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// Launches any kernel of the family — C = α·A·B + β·C — on a GPU or the simulation, for code
/// that walks [`ALL`] (each kernel's own `launch` is the typed form of the same call).
///
/// ```no_run
/// use tessera::catalog::sgemm;
/// let gpu = tessera::Gpu::new(0)?;
/// let a = gpu.upload(&[1.0f32; 6], [2, 3])?;
/// let b = gpu.upload(&[1.0f32; 12], [3, 4])?;
/// let mut c = gpu.zeros::<f32>([2, 4])?;
/// for kernel in sgemm::ALL {
///     sgemm::launch(kernel, &gpu, &a, &b, &mut c, 1.0, 0.0)?;
/// }
/// # Ok::<(), tessera::Error>(())
/// ```
pub fn launch(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<f32>,
    b: &impl crate::Input<f32>,
    c: &mut impl crate::Output<f32>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    super::launch_gemm(kernel, device, a, b, c, alpha, beta)
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 16] = [
    &sgemm_naive::KERNEL,
    &sgemm_v1::KERNEL,
    &sgemm_v2::KERNEL,
    &sgemm_v3::KERNEL,
    &sgemm_v4::KERNEL,
    &sgemm_v5::KERNEL,
    &sgemm_v6::KERNEL,
    &sgemm_v7::KERNEL,
    &sgemm_v8::KERNEL,
    &sgemm_v9::KERNEL,
    &sgemm_v10::KERNEL,
    &sgemm_v11::KERNEL,
    &sgemm_v12::KERNEL,
    &sgemm_v13::KERNEL,
    &sgemm_v6_128x64::KERNEL,
    &sgemm_v4_small::KERNEL,
];
