//! SGEMM with B stored transposed: C = α·A·Bᵀ + β·C in FP32, A [M, K] and B [N, K] — a linear
//! layer's y = x·Wᵀ on f32 tensors, its weight W stored [out, in] as `nn.Linear` keeps it. The
//! FFMA outer products read both operands from shared memory k-major, so B's [BN, BK] tile is
//! stored turned into `b_s` ([BK, BN], padded like A's) by the same transposing copy that
//! already turns A's: `copy(b.tile([bx, k], [BN, BK]), &b_s.t())`; nothing is transposed in
//! global memory. `tessera::gemm_bt` on f32 picks between them by the GEMM table.
//!
//! The rungs are the two the table takes for B stored [K, N]: V12 (stream-K, for the shapes
//! whose tiles leave SMs idle) and V13 (a producer warpgroup issuing the copies).

use crate::prelude::*;

/// [`super::sgemm::sgemm_v12`] on B stored [N, K]: 128 × 256 tiles under stream-K, each
/// operand's tile turned into k-major shared memory by its cp.async copy.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v12_bt(a: Global<f32, (M, K)>, b: Global<f32, (N, K)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).stream_k();
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]).pad(4);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([bx, k], [BN, BK]), &b_s.t());
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// [`super::sgemm::sgemm_v13`] on B stored [N, K]: a producer warpgroup turns both operands'
/// tiles into k-major shared memory while the 256 compute threads multiply.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 256, BK = 32, TM = 16, TN = 8))]
pub fn sgemm_v13_bt(a: Global<f32, (M, K)>, b: Global<f32, (N, K)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]).pad(4);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]).warp_layout([4, 8]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([bx, k], [BN, BK]), &b_s.t());
        mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// C = α·A·Bᵀ + β·C with `kernel` (one of [`ALL`]) on A [M, K] and B [N, K].
///
/// ```
/// use tessera::catalog::sgemm_bt;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = tessera::Backend::detect() else { return Ok(()) };
/// let x = backend.upload(&vec![1.0f32; 4 * 64], [4, 64])?; // 4 rows of 64 features
/// let w = backend.upload(&vec![0.5f32; 8 * 64], [8, 64])?; // 8 outputs × 64 inputs
/// let mut y = backend.zeros::<f32>([4, 8])?;
/// sgemm_bt::launch(&sgemm_bt::sgemm_v13_bt::KERNEL, &backend, &x, &w, &mut y, 1.0, 0.0)?;
/// assert_eq!(backend.download(&y)?[0], 32.0);
/// # Ok(()) }
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
pub const ALL: [&crate::KernelDefinition; 2] = [&sgemm_v12_bt::KERNEL, &sgemm_v13_bt::KERNEL];
