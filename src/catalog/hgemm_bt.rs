//! HGEMM with B stored transposed: C = α·A·Bᵀ + β·C, A [M, K] and B [N, K] (16-bit, f32
//! accumulation on wgmma) — a linear layer's y = x·Wᵀ, whose weight W is stored [out, in], as
//! torch's `F.linear` takes it. wgmma reads a K-major B through its descriptor as it reads A, so
//! `b_s` holds [BN, BK] tiles of B's rows and the product is `mma(&a_s, &b_s.t(), &mut acc)`;
//! nothing is transposed in memory. `tessera::gemm_bt` picks among these by the GEMM table.
//!
//! The rungs are the HGEMM ladder's Hopper kernels with B's tile turned: V11 (128 × 256 tiles,
//! TMA producers) and V20 (64 × 128 tiles eight stages deep, for grids of a wave) with an f32 C;
//! V19 and V22 (the same, C stored by TMA) with a C in the inputs' type.

use crate::prelude::*;

// One body, four rungs: the tiles, the stages, blocks an SM, and whether C is stored by TMA.
macro_rules! hgemm_bt {
    ($(#[$doc:meta])* $name:ident, $t:ident, $out:ident, threads = $threads:literal, min_blocks = $min_blocks:literal, stages = $stages:literal, consts($($consts:tt)*) $(, $store:ident)?) => {
        $(#[$doc])*
        #[tile_kernel(threads = $threads, vector = 8, min_blocks = $min_blocks, target = sm_90a, consts($($consts)*))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (N, K)>, c: GlobalMut<$out, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BN, BK]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = $stages, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([bx, k], [BN, BK]), &b_s);
                mma(&a_s, &b_s.t(), &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta)$(.$store())?;
        }
    };
}

// V11's 128 × 256 tiles: two consumer warpgroups, four stages of 48 KiB
macro_rules! large_tiles {
    ($(#[$doc:meta])* $name:ident, $t:ident, $out:ident $(, $store:ident)?) => {
        hgemm_bt!($(#[$doc])* $name, $t, $out, threads = 256, min_blocks = 1, stages = 4, consts(BM = 128, BN = 256, BK = 64, WN = 256) $(, $store)?);
    };
}

// V20's 64 × 128 tiles: one consumer warpgroup, eight stages of 24 KiB, one block an SM
macro_rules! small_tiles {
    ($(#[$doc:meta])* $name:ident, $t:ident, $out:ident $(, $store:ident)?) => {
        hgemm_bt!($(#[$doc])* $name, $t, $out, threads = 128, min_blocks = 1, stages = 8, consts(BM = 64, BN = 128, BK = 64, WN = 128) $(, $store)?);
    };
}

large_tiles!(
    /// V11 on B stored [N, K]: 128 × 256 tiles taken in groups of 8 tile rows, BF16 inputs, f32 C.
    hgemm_v11_bt_bf16, bf16, f32
);
large_tiles!(
    /// V11 on B stored [N, K]: 128 × 256 tiles taken in groups of 8 tile rows, F16 inputs, f32 C.
    hgemm_v11_bt_f16, f16, f32
);
small_tiles!(
    /// V20 on B stored [N, K]: 64 × 128 tiles eight stages deep, BF16 inputs, f32 C.
    hgemm_v20_bt_bf16, bf16, f32
);
small_tiles!(
    /// V20 on B stored [N, K]: 64 × 128 tiles eight stages deep, F16 inputs, f32 C.
    hgemm_v20_bt_f16, f16, f32
);
large_tiles!(
    /// V19 on B stored [N, K]: V11's tiles, C in BF16 stored by TMA from per-warp staging buffers.
    hgemm_v19_bt_bf16_to_bf16, bf16, bf16, by_tma
);
large_tiles!(
    /// V19 on B stored [N, K]: V11's tiles, C in F16 stored by TMA from per-warp staging buffers.
    hgemm_v19_bt_f16_to_f16, f16, f16, by_tma
);
small_tiles!(
    /// V22 on B stored [N, K]: V20's tiles, C in BF16 stored by TMA.
    hgemm_v22_bt_bf16_to_bf16, bf16, bf16, by_tma
);
small_tiles!(
    /// V22 on B stored [N, K]: V20's tiles, C in F16 stored by TMA.
    hgemm_v22_bt_f16_to_f16, f16, f16, by_tma
);

/// Every kernel of the family: f32 C, then C in the inputs' type.
pub const ALL: [&crate::KernelDefinition; 8] = [
    &hgemm_v11_bt_bf16::KERNEL,
    &hgemm_v11_bt_f16::KERNEL,
    &hgemm_v20_bt_bf16::KERNEL,
    &hgemm_v20_bt_f16::KERNEL,
    &hgemm_v19_bt_bf16_to_bf16::KERNEL,
    &hgemm_v19_bt_f16_to_f16::KERNEL,
    &hgemm_v22_bt_bf16_to_bf16::KERNEL,
    &hgemm_v22_bt_f16_to_f16::KERNEL,
];

/// Launches a kernel of [`ALL`] — C = α·A·Bᵀ + β·C, `b` stored [N, K] — on a GPU or the
/// simulation; C is f32 or, for the `_to_` kernels, the inputs' type.
///
/// ```
/// use tessera::prelude::*;
/// use tessera::catalog::hgemm_bt;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let one = bf16::from_f32(1.0);
/// let x = backend.upload(&vec![one; 4 * 64], [4, 64])?; // 4 rows of 64 features
/// let w = backend.upload(&vec![one; 8 * 64], [8, 64])?; // 8 outputs × 64 inputs
/// let mut y = backend.zeros::<f32>([4, 8])?;
/// hgemm_bt::launch(&hgemm_bt::hgemm_v20_bt_bf16::KERNEL, &backend, &x, &w, &mut y, 1.0, 0.0)?;
/// assert_eq!(backend.download(&y)?[0], 64.0);
/// # Ok(()) }
/// ```
pub fn launch<T: crate::runtime::Element, C: crate::runtime::Element>(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<T>,
    b: &impl crate::Input<T>,
    c: &mut impl crate::Output<C>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    super::launch_gemm(kernel, device, a, b, c, alpha, beta)
}
