//! The HGEMM ladder: C = α·A·B + β·C with 16-bit inputs (BF16 or F16) and f32 accumulation on
//! tensor cores (`mma.sync.m16n8k16`, every GPU since Ampere), any M, N, K, f32 output.
//!
//! Each kernel is its predecessor plus one idea: V1 multiplies fragments loaded straight from
//! global memory → V2 stages 128 × 32 tiles in shared memory and loads fragments with
//! `ldmatrix` → V3 swizzles the tiles (`.swizzle_bytes(128)`), so `ldmatrix` is conflict-free →
//! V4 keeps three tiles in flight with a cp.async pipeline → V5 gives each warp a 64 × 64 tile of
//! a 128 × 256 block tile, four stages deep. Every kernel comes as `_bf16` and `_f16`.

use crate::prelude::*;

// Each kernel is stamped for BF16 and for F16 inputs by a macro_rules! of its own: the
// element type is the only difference, and `#[tile_kernel]` reads it from the tokens.

macro_rules! hgemm_v1 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V1: tensor cores, fragments straight from global memory — each lane loads its own
        /// eight values of A and four of B per 16-deep k-step, bounds-checked, and the warp
        /// multiplies them with `mma.sync`.
        #[doc = $what]
        #[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 16, WM = 32, WN = 32))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 1) {
                mma(a.tile([by, k], [BM, BK]), b.tile([k, bx], [BK, BN]), &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v1!(hgemm_v1_bf16, bf16, "BF16 inputs.");
hgemm_v1!(hgemm_v1_f16, f16, "F16 inputs.");

macro_rules! hgemm_v2 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V2: 128 × 128 × 32 tiles of A and B in shared memory (16-byte copies), fragments
        /// loaded with `ldmatrix` (B with `.trans`), each of the 8 warps a 64 × 32 tile.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]);
            let b_s = shared::<$t>([BK, BN]);
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 1) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v2!(hgemm_v2_bf16, bf16, "BF16 inputs.");
hgemm_v2!(hgemm_v2_f16, f16, "F16 inputs.");

macro_rules! hgemm_v3 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V3: V2 with both tiles XOR-swizzled in 16-byte chunks, so the 8 rows of each
        /// `ldmatrix` phase fall in 8 different bank groups (V2's A rows are 64 bytes apart:
        /// a 4-way conflict; B's 256: 8-way).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(64);
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128);
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 1) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v3!(hgemm_v3_bf16, bf16, "BF16 inputs.");
hgemm_v3!(hgemm_v3_f16, f16, "F16 inputs.");

macro_rules! hgemm_v4 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V4: V3 with a 3-stage cp.async pipeline — two tiles travel straight from global to
        /// shared memory while the warps multiply the third.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(64);
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128);
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 3) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v4!(hgemm_v4_bf16, bf16, "BF16 inputs.");
hgemm_v4!(hgemm_v4_f16, f16, "F16 inputs.");

macro_rules! hgemm_v5 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V5: V4 on 128 × 256 block tiles, each warp a 64 × 64 tile (twice the mma.sync per
        /// ldmatrix of V4's 64 × 32), four stages (96 KiB of shared memory).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, consts(BM = 128, BN = 256, BK = 32, WM = 64, WN = 64))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(64);
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128);
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v5!(hgemm_v5_bf16, bf16, "BF16 inputs.");
hgemm_v5!(hgemm_v5_f16, f16, "F16 inputs.");

macro_rules! hgemm_v6 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V6: V5 with 64-deep k-tiles — half the barriers and pipeline waits per k, four
        /// mma.sync k-steps between them — three stages (144 KiB: sm_80 and sm_90 hold it).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90, consts(BM = 128, BN = 256, BK = 64, WM = 64, WN = 64))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128);
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128);
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 3) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v6!(hgemm_v6_bf16, bf16, "BF16 inputs.");
hgemm_v6!(hgemm_v6_f16, f16, "F16 inputs.");

macro_rules! hgemm_v7 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V7 (sm_90a, Hopper): wgmma. V6's tiles and cp.async pipeline, multiplied by
        /// `wgmma.mma_async.m64n256k16` — each of the two warpgroups a 64 × 256 half of the
        /// block tile, the tensor cores reading A and B straight from shared memory (no
        /// ldmatrix, no operand registers) — so the tiles are stored in the hardware's
        /// 128-byte swizzled panels (`.panels()`), four stages deep (192 KiB).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v7!(hgemm_v7_bf16, bf16, "BF16 inputs.");
hgemm_v7!(hgemm_v7_f16, f16, "F16 inputs.");

macro_rules! hgemm_v8 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V8 (sm_90a): V7 warp-specialised — a producer warpgroup (`producers = 128`) issues
        /// every k-tile's cp.async copies into the ring and signals each landed stage on an
        /// mbarrier, while the two wgmma warpgroups only wait, multiply and free the stage;
        /// the blocks are persistent, walking the output tiles, and `setmaxnreg` moves the
        /// producers' registers to the consumers.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v8!(hgemm_v8_bf16, bf16, "BF16 inputs.");
hgemm_v8!(hgemm_v8_f16, f16, "F16 inputs.");

macro_rules! hgemm_v9 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V9 (sm_90a): V7 on 64 × 128 tiles — one warpgroup (128 threads) multiplying
        /// `wgmma.m64n128k16`, six stages of 24 KiB — for shapes where V7's 128 × 256 tiles
        /// are too few to fill the GPU (1024³: 32 blocks for 132 SMs; here 128, two per SM).
        #[doc = $what]
        #[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 6) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v9!(hgemm_v9_bf16, bf16, " BF16 inputs.");
hgemm_v9!(hgemm_v9_f16, f16, " F16 inputs.");

macro_rules! hgemm_v10 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V10 (sm_90a): V8 with TMA (`copies = tma`) — one producer thread issues each
        /// k-tile as bulk tensor copies (one box per 64-column panel, the copy engine writing
        /// the 128-byte swizzle and zero-filling the edges), counted on the stage's mbarrier in
        /// bytes, where V8's 128 producer threads issued 1536 cp.async copies of 16 bytes.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v10!(hgemm_v10_bf16, bf16, " BF16 inputs.");
hgemm_v10!(hgemm_v10_f16, f16, " F16 inputs.");

macro_rules! hgemm_v11 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V11 (sm_90a): V10 with its tiles taken in groups of 8 tile rows (`.grouped(8)`),
        /// down each group's columns: the blocks resident at once read 8 row panels of A and a
        /// few column panels of B, which stay in L2, instead of every column panel of B.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v11!(hgemm_v11_bf16, bf16, " BF16 inputs.");
hgemm_v11!(hgemm_v11_f16, f16, " F16 inputs.");

// V12, V20 and V22: 64 × 128 tiles, one consumer warpgroup multiplying `wgmma.m64n128k16` fed
// by TMA, `min_blocks` blocks an SM of `stages` 24 KiB stages; C stored by the warps, or by TMA
// (`$store` = `by_tma`).
macro_rules! hgemm_64x128 {
    ($(#[$doc:meta])* $name:ident, $t:ident, $out:ident, min_blocks = $min_blocks:literal, stages = $stages:literal $(, $store:ident)?) => {
        $(#[$doc])*
        #[tile_kernel(threads = 128, vector = 8, min_blocks = $min_blocks, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<$out, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = $stages, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta)$(.$store())?;
        }
    };
}

macro_rules! hgemm_v12 {
    ($name:ident, $t:ident, $what:literal) => {
        hgemm_64x128!(
            /// V12 (sm_90a): V11 on 64 × 128 tiles — one consumer warpgroup multiplying
            /// `wgmma.m64n128k16`, fed by TMA — two blocks per SM (`min_blocks = 2`, four stages
            /// of 24 KiB each), for shapes that 128 × 256 tiles leave SMs idle on (1024³: 32 tiles
            /// of 128 × 256 for 132 SMs, 128 of 64 × 128).
            #[doc = $what]
            $name, $t, f32, min_blocks = 2, stages = 4
        );
    };
}
hgemm_v12!(hgemm_v12_bf16, bf16, " BF16 inputs.");
hgemm_v12!(hgemm_v12_f16, f16, " F16 inputs.");

macro_rules! hgemm_v13 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V13 (sm_90a): V11 on 128 × 128 tiles — two consumer warpgroups of 64 × 128 — for the
        /// middle sizes (2048³: 128 tiles of 128 × 256, 256 of 128 × 128), 5 stages of 32 KiB.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 128, BK = 64, WN = 128))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 5, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v13!(hgemm_v13_bf16, bf16, " BF16 inputs.");
hgemm_v13!(hgemm_v13_f16, f16, " F16 inputs.");

macro_rules! hgemm_v14 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V14 (sm_90a): V11 with two consumer warpgroups that take tiles in turn
        /// (`consumers = 2`, 64 × 256 tiles, each warpgroup its own): one warpgroup stores its
        /// tile while the other multiplies, where V11's two warpgroups store one 128 × 256 tile
        /// together while the tensor cores wait — for shapes whose output is large against
        /// their k loop (8192 × 8192 × 256). Five stages of 40 KiB.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 64, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 5, producers = 128, copies = tma, consumers = 2) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v14!(hgemm_v14_bf16, bf16, " BF16 inputs.");
hgemm_v14!(hgemm_v14_f16, f16, " F16 inputs.");

macro_rules! hgemm_v21 {
    ($name:ident, $t:ident, $out:ident, $what:literal) => {
        /// V21 (sm_90a): ping-pong on 128 × 128 tiles — two consumer warpgroups that take
        /// tiles in turn (`consumers = 2`), each holding a whole 128 × 128 tile as two m64 tiles
        /// (`.warpgroup_tile([128, WN])`: two `wgmma.m64n128k16` a k-step, B's descriptor
        /// shared) — so one warpgroup's epilogue runs while the other multiplies, as V14's do,
        /// on tiles that read 64 bytes of A and B per 64 multiply-adds where V14's 64 × 256
        /// read 80. Six stages of 32 KiB. The fastest of the ladder on the short-K shape
        /// 8192 × 8192 × 256 (103% of cuBLAS on an H200, 102% on an H100), but 93% (H200) and
        /// 81% (H100) of V11 at 4096³: its tiles take a third more bytes from L2 a product than
        /// V11's 128 × 256, and one warpgroup's wgmma at a time kept the tensor pipe 74–80% busy
        /// where V11's two keep it 89% (BENCHMARKS.md, thirty-first session).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 128, BK = 64, WM = 128, WN = 128))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<$out, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 6, producers = 128, copies = tma, consumers = 2) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v21!(hgemm_v21_bf16, bf16, f32, " BF16 inputs.");
hgemm_v21!(hgemm_v21_f16, f16, f32, " F16 inputs.");
hgemm_v21!(hgemm_v21_bf16_to_bf16, bf16, bf16, " BF16 inputs and output.");
hgemm_v21!(hgemm_v21_f16_to_f16, f16, f16, " F16 inputs and output.");

macro_rules! hgemm_v11_16_bit_out {
    ($name:ident, $t:ident, $what:literal) => {
        /// V11 with C in the inputs' 16-bit type: each f32 accumulator, after α and β (C read
        /// as 16 bits, widened), is rounded once to nearest even at the store — half the bytes
        /// of C that an f32 result moves, what `a @ b` of two bf16 tensors gives in torch.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<$t, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v11_16_bit_out!(hgemm_v11_bf16_to_bf16, bf16, " BF16 inputs and output.");
hgemm_v11_16_bit_out!(hgemm_v11_f16_to_f16, f16, " F16 inputs and output.");

macro_rules! hgemm_v15 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V15 (sm_90, mma.sync): `mma.sync` + `ldmatrix` on V4's 64 × 32 warp tiles of
        /// 128 × 128 block tiles, fed the way V11 is: TMA boxes into `.panels()` tiles issued
        /// by a producer warpgroup, persistent blocks taking grouped tiles, so the eight compute
        /// warps only load fragments and multiply.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90, consts(BM = 128, BN = 128, BK = 64, WM = 64, WN = 32))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v15!(hgemm_v15_bf16, bf16, " BF16 inputs.");
hgemm_v15!(hgemm_v15_f16, f16, " F16 inputs.");

macro_rules! hgemm_v16 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V16 (sm_90, mma.sync): V15 with V6's 64 × 64 warp tiles — each `ldmatrix` feeds
        /// twice the `mma.sync` of a 64 × 32 tile — four compute warps on the 128 × 128 tile,
        /// and one producer warp (`producers = 32`: one thread issues the TMA copies) instead
        /// of a warpgroup. Five warps leave at most two on each of the SM's four register
        /// partitions, so ptxas may give a thread up to 255 registers, room for the 128
        /// accumulators of a 64 × 64 warp tile. One compute warp a scheduler is too few to
        /// hide the `ldmatrix` → `mma.sync` chain: V17 keeps two.
        #[doc = $what]
        #[tile_kernel(threads = 128, vector = 8, target = sm_90, consts(BM = 128, BN = 128, BK = 64, WM = 64, WN = 64))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 32, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v16!(hgemm_v16_bf16, bf16, " BF16 inputs.");
hgemm_v16!(hgemm_v16_f16, f16, " F16 inputs.");

macro_rules! hgemm_v17 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V17 (sm_90, mma.sync): V15 with V6's 64 × 64 warp tiles — each `ldmatrix` feeds two
        /// `mma.sync` where V15's 64 × 32 tiles feed one — eight compute warps on a 128 × 256
        /// block tile, two a scheduler. The block is still 384 threads, whose launch bound
        /// starts every warp at 168 registers; ptxas compiles the compute warps' code within
        /// the 232 that `setmaxnreg` gives them after the producers hand theirs back, so the 128
        /// accumulators a lane holds fit without spills.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90, consts(BM = 128, BN = 256, BK = 64, WM = 64, WN = 64))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v17!(hgemm_v17_bf16, bf16, " BF16 inputs.");
hgemm_v17!(hgemm_v17_f16, f16, " F16 inputs.");

macro_rules! hgemm_v18 {
    ($name:ident, $t:ident, $what:literal) => {
        /// V18 (sm_90a): V11 in clusters of two blocks one above the other (`cluster = (1, 2)`),
        /// which take tiles (bx, 2j) and (bx, 2j + 1): both read the same 64 × 256 tile of B per
        /// k-tile, so each block's producer copies two of its four panels and multicasts them
        /// into both blocks' stages — B leaves L2 once per cluster, half the B traffic of V11.
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, cluster = (1, 2), consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
        }
    };
}
hgemm_v18!(hgemm_v18_bf16, bf16, " BF16 inputs.");
hgemm_v18!(hgemm_v18_f16, f16, " F16 inputs.");

macro_rules! hgemm_v19 {
    ($name:ident, $t:ident, $out:ident, $what:literal) => {
        /// V19 (sm_90a): V11 storing C by TMA (`.by_tma()`): each compute warp stages its 16 rows
        /// of a 128-byte panel in shared memory and one lane hands it to the copy engine, which
        /// writes C while the warp starts its next tile — where V11's warps store every value
        /// themselves while the tensor cores wait. Two 2 KiB staging buffers a warp (32 KiB
        /// beside the four 48 KiB stages).
        #[doc = $what]
        #[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
        pub fn $name(a: Global<$t, (M, K)>, b: Global<$t, (K, N)>, c: GlobalMut<$out, (M, N)>, alpha: f32, beta: f32) {
            let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
            let a_s = shared::<$t>([BM, BK]).swizzle_bytes(128).panels();
            let b_s = shared::<$t>([BK, BN]).swizzle_bytes(128).panels();
            let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
            for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
                copy(a.tile([by, k], [BM, BK]), &a_s);
                copy(b.tile([k, bx], [BK, BN]), &b_s);
                mma(&a_s, &b_s, &mut acc);
            }
            copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta).by_tma();
        }
    };
}
hgemm_v19!(hgemm_v19_bf16, bf16, f32, " BF16 inputs.");
hgemm_v19!(hgemm_v19_f16, f16, f32, " F16 inputs.");
hgemm_v19!(hgemm_v19_bf16_to_bf16, bf16, bf16, " BF16 inputs and output.");
hgemm_v19!(hgemm_v19_f16_to_f16, f16, f16, " F16 inputs and output.");

macro_rules! hgemm_v20 {
    ($name:ident, $t:ident, $out:ident, $what:literal) => {
        hgemm_64x128!(
            /// V20 (sm_90a): V12's 64 × 128 tiles eight stages deep, one block an SM (192 KiB):
            /// where the grid is at most one wave (1024³: 128 tiles for 132 SMs) no second block
            /// shares the SM, and a block's producer runs up to eight k-tiles ahead — half of
            /// K = 1024 — while its tensor cores start. cuBLAS's own kernel at 1024³ is eight
            /// stages of 128 × 64 tiles.
            #[doc = $what]
            $name, $t, $out, min_blocks = 1, stages = 8
        );
    };
}
hgemm_v20!(hgemm_v20_bf16, bf16, f32, " BF16 inputs.");
hgemm_v20!(hgemm_v20_f16, f16, f32, " F16 inputs.");
hgemm_v20!(hgemm_v20_bf16_to_bf16, bf16, bf16, " BF16 inputs and output.");
hgemm_v20!(hgemm_v20_f16_to_f16, f16, f16, " F16 inputs and output.");

macro_rules! hgemm_v22 {
    ($name:ident, $t:ident, $out:ident, $what:literal) => {
        hgemm_64x128!(
            /// V22 (sm_90a): V20 storing C by TMA (`.by_tma()`), as V19 is V11: each of the four
            /// warps stages its 16 rows of a 128-byte panel in shared memory and one lane hands
            /// it to the copy engine, so the stores of a one-wave grid (1024³) leave the SM while
            /// the warps stage the next panel.
            #[doc = $what]
            $name, $t, $out, min_blocks = 1, stages = 8, by_tma
        );
    };
}
hgemm_v22!(hgemm_v22_bf16_to_bf16, bf16, bf16, " BF16 inputs and output.");
hgemm_v22!(hgemm_v22_f16_to_f16, f16, f16, " F16 inputs and output.");

/// TF32 GEMM on f32 data: `precision = tf32` turns the same `mma` on a warp-tile fragment into
/// `mma.sync.m16n8k8` on TF32 operands (each rounded with `cvt.rna`, f32 accumulation), V4's
/// pipeline on 128 × 128 tiles. A is stored [BM, BK] with the 128-byte swizzle, so `ldmatrix`
/// reads its 32-bit values conflict-free; B's tile stays [BK, BN], each lane reading its two
/// values per k-step, padded by 8 floats so the 32 lanes hit 32 banks.
#[tile_kernel(threads = 256, vector = 4, target = sm_90, precision = tf32, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
pub fn gemm_tf32(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128);
    let b_s = shared::<f32>([BK, BN]).pad(8);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// TF32 on wgmma (sm_90a), V11's pipeline with f32 tiles of 32 k (128-byte rows, as V11's
/// 64 16-bit k), `wgmma.m64n256k8`. The PTX ISA transposes only 16-bit wgmma operands, so B
/// comes K-major: the tensor `b` is Bᵀ, stored [N, K] — the layout of a linear layer's weights
/// (C = A·Wᵀ). [`gemm_tf32_wgmma`] multiplies a B stored [K, N] through a transposed copy.
/// The tensor cores read the f32 values from shared memory and ignore their low 13 mantissa
/// bits (TF32 by truncation, where `gemm_tf32` rounds each value to nearest).
#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, consts(BM = 128, BN = 256, BK = 32, WN = 256))]
pub fn gemm_tf32_wgmma_bt(
    a: Global<f32, (M, K)>,
    b: Global<f32, (N, K)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BN, BK]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([bx, k], [BN, BK]), &b_s);
        mma(&a_s, &b_s.t(), &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// [`gemm_tf32_wgmma_bt`] on 64 × 128 tiles — one consumer warpgroup on `wgmma.m64n128k8`,
/// two blocks per SM (`min_blocks = 2`, four stages of 24 KiB) — as V12 is V11 for the small
/// shapes: 1024³ is 32 tiles of 128 × 256 for 132 SMs, 128 of 64 × 128.
#[tile_kernel(threads = 128, vector = 4, min_blocks = 2, target = sm_90a, precision = tf32, consts(BM = 64, BN = 128, BK = 32, WN = 128))]
pub fn gemm_tf32_wgmma_bt_64x128(
    a: Global<f32, (M, K)>,
    b: Global<f32, (N, K)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BN, BK]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([bx, k], [BN, BK]), &b_s);
        mma(&a_s, &b_s.t(), &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// [`gemm_tf32_wgmma_bt`] in clusters of two blocks one above the other (`cluster = (1, 2)`),
/// as V18 is V11: both read the same 256 × 32 tile of Bᵀ per k-tile — one 128-byte panel, so
/// each block copies one 128-row slice of it by TMA multicast into both blocks' stages.
#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, cluster = (1, 2), consts(BM = 128, BN = 256, BK = 32, WN = 256))]
pub fn gemm_tf32_wgmma_bt_clusters(
    a: Global<f32, (M, K)>,
    b: Global<f32, (N, K)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BN, BK]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([bx, k], [BN, BK]), &b_s);
        mma(&a_s, &b_s.t(), &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// TF32 on wgmma for a B stored [K, N] (`torch`'s `a @ b`), with no transposed copy: wgmma
/// reads TF32 operands from shared memory only K-major, and B's tile [BK, BN] holds N along its
/// rows — but wgmma's A may come from registers, loaded by each lane in any layout. So the
/// kernel computes Cᵀ = Bᵀ·Aᵀ: `b_s.t()` is the product's A, loaded into registers by the
/// lanes (four values each per k-step of 8), `a_s.t()` its B (K-major, read through a
/// descriptor), and the 128 × 256 tile of Cᵀ is stored transposed, `copy(&acc_t.t(), ..)`.
/// Tiles of 256 rows of C by 128 columns, V11's pipeline otherwise (TMA producers, four
/// stages of 48 KiB).
#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, consts(BM = 256, BN = 128, BK = 32, WM = 256))]
pub fn gemm_tf32_wgmma_kn(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([64, WM]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t);
    }
    copy(&acc_t.t(), c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// [`gemm_tf32_wgmma_kn`] on tiles of 128 rows of C by 64 columns — one consumer warpgroup on
/// `wgmma.m64n128k8`, two blocks per SM — for the small shapes, as
/// [`gemm_tf32_wgmma_bt_64x128`] is for the Bᵀ kernels. Its lanes load A two k-steps at a
/// time, a commit group each (`.unroll(2)`: at 1024³ 99–100% of cuBLAS TF32 where a group a
/// k-step gave 92–94%).
#[tile_kernel(threads = 128, vector = 4, min_blocks = 2, target = sm_90a, precision = tf32, consts(BM = 128, BN = 64, BK = 32, WM = 128))]
pub fn gemm_tf32_wgmma_kn_64x128(
    a: Global<f32, (M, K)>,
    b: Global<f32, (K, N)>,
    c: GlobalMut<f32, (M, N)>,
    alpha: f32,
    beta: f32,
) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([64, WM]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t).unroll(2);
    }
    copy(&acc_t.t(), c.tile([by, bx], [BM, BN])).axpby(alpha, beta);
}

/// C = α·A·B + β·C on TF32 wgmma for a B stored [K, N]. Where TMA reads both operands as they
/// are (rows of A and B 16-byte aligned: K and N multiples of 4), [`gemm_tf32_wgmma_kn`]
/// multiplies them with no copy (its 64 × 128-tile form [`gemm_tf32_wgmma_kn_64x128`] under 64
/// tiles of 256 × 128). Otherwise B is transposed into a scratch tensor by the catalog's
/// transpose and [`gemm_tf32_wgmma_bt`] multiplies (its 64 × 128-tile form
/// [`gemm_tf32_wgmma_bt_64x128`] under 64 tiles of 128 × 256): Bᵀ's copy starts its rows on
/// 128-byte lines, and an A whose rows are not 16-byte aligned is copied so too — otherwise the
/// kernel would copy it element by element at a third of its speed. A caller whose B is
/// already stored [N, K] (a linear layer's weights) launches [`gemm_tf32_wgmma_bt`] directly
/// with [`launch_tf32`]. The [`Launched`] is the GEMM's.
///
/// ```
/// use tessera::prelude::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let Ok(backend) = Backend::detect() else { return Ok(()) };
/// let a = backend.upload(&vec![1.0f32; 17 * 39], [17, 39])?; // rows of 156 bytes
/// let b = backend.upload(&vec![0.5f32; 39 * 9], [39, 9])?;
/// let mut c = backend.zeros::<f32>([17, 9])?;
/// let launched = tessera::catalog::hgemm::gemm_tf32_wgmma(&backend, &a, &b, &mut c, 1.0, 0.0)?;
/// assert_eq!(launched.kernel, "gemm_tf32_wgmma_bt_64x128"); // one tile
/// assert!(launched.tma); // A and Bᵀ read by TMA from their aligned copies
/// assert_eq!(backend.download(&c)?[0], 19.5);
/// # Ok(()) }
/// ```
pub fn gemm_tf32_wgmma(
    device: &impl crate::Device,
    a: &impl crate::Input<f32>,
    b: &impl crate::Input<f32>,
    c: &mut impl crate::Output<f32>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    let (&[m, k], &[b_rows, n]) = (a.shape(), b.shape()) else {
        return Err(crate::Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() });
    };
    if b_rows != k {
        return Err(crate::Error::GemmShape { a: a.shape().to_vec(), b: b.shape().to_vec(), c: c.shape().to_vec() });
    }
    if crate::Argument::input("a", a).rows_aligned(16) && crate::Argument::input("b", b).rows_aligned(16) {
        // under half a wave of 256 × 128 tiles on 132 SMs, the 128 × 64 ones keep every SM busy
        let kernel = if m.div_ceil(256) * n.div_ceil(128) < 64 {
            &gemm_tf32_wgmma_kn_64x128::KERNEL
        } else {
            &gemm_tf32_wgmma_kn::KERNEL
        };
        return super::launch_gemm(kernel, device, a, b, c, alpha, beta);
    }
    let on = device.device_ref();
    let leading = k.next_multiple_of(32);
    let mut transposed = on.scratch::<f32>([n * leading])?;
    let mut bt = transposed.view_with_leading_dimension_mut(0, [n, k], leading)?;
    // 16-byte accesses where B's rows allow them; 4-byte ones along a 64 × 64 tile otherwise
    let transpose = if n % 4 == 0 {
        &super::transpose::transpose_vector_64::KERNEL
    } else {
        &super::transpose::transpose_padded_64_down::KERNEL
    };
    transpose.launch(device, &mut [crate::Argument::input("x", b), crate::Argument::output("y", &mut bt)])?;
    let bt = transposed.view_with_leading_dimension(0, [n, k], leading)?;
    // under half a wave of 128 × 256 tiles on 132 SMs, the 64 × 128 ones keep every SM busy
    let kernel = if m.div_ceil(128) * n.div_ceil(256) < 64 {
        &gemm_tf32_wgmma_bt_64x128::KERNEL
    } else {
        &gemm_tf32_wgmma_bt::KERNEL
    };
    if crate::Argument::input("a", a).rows_aligned(16) {
        return super::launch_gemm(kernel, device, a, &bt, c, alpha, beta);
    }
    let mut a_copy = on.scratch::<f32>([m * leading])?;
    let mut a_aligned = a_copy.view_with_leading_dimension_mut(0, [m, k], leading)?;
    super::matrix_copy::matrix_copy_f32::KERNEL
        .launch(device, &mut [crate::Argument::input("x", a), crate::Argument::output("y", &mut a_aligned)])?;
    let a_aligned = a_copy.view_with_leading_dimension(0, [m, k], leading)?;
    super::launch_gemm(kernel, device, &a_aligned, &bt, c, alpha, beta)
}

/// [`launch_bf16`] for the TF32 kernels ([`ALL_TF32`], and [`ALL_TF32_TRANSPOSED_B`] with
/// `b` = Bᵀ stored [N, K]): f32 inputs, multiplied as TF32.
pub fn launch_tf32(
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

/// Launches any kernel of the family on BF16 inputs — C = α·A·B + β·C — on a GPU or the
/// simulation, for code that walks [`ALL_BF16`].
pub fn launch_bf16(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<bf16>,
    b: &impl crate::Input<bf16>,
    c: &mut impl crate::Output<f32>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    super::launch_gemm(kernel, device, a, b, c, alpha, beta)
}

/// [`launch_bf16`] for the F16 kernels ([`ALL_F16`]).
pub fn launch_f16(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<f16>,
    b: &impl crate::Input<f16>,
    c: &mut impl crate::Output<f32>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    super::launch_gemm(kernel, device, a, b, c, alpha, beta)
}

/// Launches a kernel of [`ALL_16_BIT_OUTPUT`]: C in the inputs' 16-bit type `T`.
pub fn launch_gemm_16_bit<T: crate::runtime::Element>(
    kernel: &crate::KernelDefinition,
    device: &impl crate::Device,
    a: &impl crate::Input<T>,
    b: &impl crate::Input<T>,
    c: &mut impl crate::Output<T>,
    alpha: f32,
    beta: f32,
) -> Result<crate::Launched, crate::Error> {
    super::launch_gemm(kernel, device, a, b, c, alpha, beta)
}

/// The BF16 kernels of the family, in ladder order.
pub const ALL_BF16: [&crate::KernelDefinition; 21] = [
    &hgemm_v1_bf16::KERNEL,
    &hgemm_v2_bf16::KERNEL,
    &hgemm_v3_bf16::KERNEL,
    &hgemm_v4_bf16::KERNEL,
    &hgemm_v5_bf16::KERNEL,
    &hgemm_v6_bf16::KERNEL,
    &hgemm_v7_bf16::KERNEL,
    &hgemm_v8_bf16::KERNEL,
    &hgemm_v9_bf16::KERNEL,
    &hgemm_v10_bf16::KERNEL,
    &hgemm_v11_bf16::KERNEL,
    &hgemm_v12_bf16::KERNEL,
    &hgemm_v13_bf16::KERNEL,
    &hgemm_v14_bf16::KERNEL,
    &hgemm_v15_bf16::KERNEL,
    &hgemm_v16_bf16::KERNEL,
    &hgemm_v17_bf16::KERNEL,
    &hgemm_v18_bf16::KERNEL,
    &hgemm_v19_bf16::KERNEL,
    &hgemm_v20_bf16::KERNEL,
    &hgemm_v21_bf16::KERNEL,
];

/// The F16 kernels of the family, in ladder order.
pub const ALL_F16: [&crate::KernelDefinition; 21] = [
    &hgemm_v1_f16::KERNEL,
    &hgemm_v2_f16::KERNEL,
    &hgemm_v3_f16::KERNEL,
    &hgemm_v4_f16::KERNEL,
    &hgemm_v5_f16::KERNEL,
    &hgemm_v6_f16::KERNEL,
    &hgemm_v7_f16::KERNEL,
    &hgemm_v8_f16::KERNEL,
    &hgemm_v9_f16::KERNEL,
    &hgemm_v10_f16::KERNEL,
    &hgemm_v11_f16::KERNEL,
    &hgemm_v12_f16::KERNEL,
    &hgemm_v13_f16::KERNEL,
    &hgemm_v14_f16::KERNEL,
    &hgemm_v15_f16::KERNEL,
    &hgemm_v16_f16::KERNEL,
    &hgemm_v17_f16::KERNEL,
    &hgemm_v18_f16::KERNEL,
    &hgemm_v19_f16::KERNEL,
    &hgemm_v20_f16::KERNEL,
    &hgemm_v21_f16::KERNEL,
];

/// The kernels whose C is in their inputs' 16-bit type (BF16 in, BF16 out; F16 in, F16 out).
pub const ALL_16_BIT_OUTPUT: [&crate::KernelDefinition; 10] = [
    &hgemm_v11_bf16_to_bf16::KERNEL,
    &hgemm_v11_f16_to_f16::KERNEL,
    &hgemm_v19_bf16_to_bf16::KERNEL,
    &hgemm_v19_f16_to_f16::KERNEL,
    &hgemm_v20_bf16_to_bf16::KERNEL,
    &hgemm_v20_f16_to_f16::KERNEL,
    &hgemm_v21_bf16_to_bf16::KERNEL,
    &hgemm_v21_f16_to_f16::KERNEL,
    &hgemm_v22_bf16_to_bf16::KERNEL,
    &hgemm_v22_f16_to_f16::KERNEL,
];

/// The TF32 kernels (f32 data on tensor cores) that take B stored [K, N].
pub const ALL_TF32: [&crate::KernelDefinition; 3] =
    [&gemm_tf32::KERNEL, &gemm_tf32_wgmma_kn::KERNEL, &gemm_tf32_wgmma_kn_64x128::KERNEL];

/// The TF32 wgmma kernels that take B stored [K, N] as it is (Cᵀ = Bᵀ·Aᵀ, B's tile in wgmma's
/// A registers).
pub const ALL_TF32_WGMMA_KN: [&crate::KernelDefinition; 2] =
    [&gemm_tf32_wgmma_kn::KERNEL, &gemm_tf32_wgmma_kn_64x128::KERNEL];

/// The TF32 kernels that take B transposed, stored [N, K] (the tensor `b` is Bᵀ).
pub const ALL_TF32_TRANSPOSED_B: [&crate::KernelDefinition; 3] =
    [&gemm_tf32_wgmma_bt::KERNEL, &gemm_tf32_wgmma_bt_64x128::KERNEL, &gemm_tf32_wgmma_bt_clusters::KERNEL];

/// Every kernel of the family.
pub fn all() -> impl Iterator<Item = &'static crate::KernelDefinition> {
    ALL_BF16.into_iter().chain(ALL_F16).chain(ALL_16_BIT_OUTPUT).chain(ALL_TF32).chain(ALL_TF32_TRANSPOSED_B)
}
