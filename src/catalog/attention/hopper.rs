//! Fused attention for Hopper (sm_90a): the forward pass of [`super`] on `wgmma`, the tensor
//! cores reading Q and K straight from shared memory and P from registers.
//!
//! Each block takes BQ query rows of one (batch, head), 64 per warpgroup: S = Q·Kᵀ is one
//! `wgmma.m64nBKVk16` chain per warpgroup (Q and K K-major in 128-byte swizzled panels), the
//! online softmax runs in thread code over S's accumulators (wgmma's accumulator layout is
//! mma.sync's, warp w of a group holding rows 16w ..), and O += P·V is a `wgmma` whose A
//! operand is P rounded to 16 bits in registers and whose B is V read MN-major (`.trans`) from
//! its panels. K and V come through a 3-stage cp.async ring; thread code between the two
//! products makes each wgmma be waited for before the softmax reads S.
//!
//! The kernels fed by TMA producers defer P·V (`mma(&s, &v_s, &mut o_acc).deferred()`,
//! FlashAttention-3's intra-warpgroup overlap): key tile j's P·V is issued right behind tile
//! j + 1's Q·Kᵀ and waited for only where the output is rescaled, so tile j + 1's softmax runs
//! while the tensor cores multiply P·V — which is why the rescale of `o_acc` is a statement of
//! its own after the softmax. On an H100 that gained 4–9% at head dim 128 from 1024 tokens
//! (causal: 5–6% from 4096) and 4–5% at 256 (causal unchanged). At head dim 64 it first lost
//! 9–35% (the 256-key tile's P registers spilled); once S was overwritten rather than zeroed
//! (below), 192 keys deferred beat 256 in place by 1–3% and the causal kernel gained up to 4%.
//!
//! S = Q·Kᵀ overwrites S (`.overwrite()`: wgmma's scale-d = 0 on the first k-step, its
//! registers write-only), so S is neither zeroed each key tile nor kept live from the last one:
//! +6% at head dim 128, +6–9% at 64, +3–5% at 256 on an H100 (causal +1–8%).
//!
//! The softmax exponentiates with `exp2_ftz` (one MUFU.EX2; `exp2` adds three instructions a
//! value to keep results below 2^-126, which vanish beside the row's maximum of 1): 1–4% faster
//! at head dim 128 on an H200, 4–8% at 64, 3% at 256.
//!
//! The configurations are `tessera tune`'s winners on an H100 at 4096 tokens (BENCHMARKS.md):
//! 128 query rows and 128 keys a tile at head dim 128 (224 KiB of shared memory, causal or
//! not); 128 × 256 at head dim 64, and 64 × 64 (one warpgroup) for its causal kernel. The
//! kernels fed by TMA producers take the same tiles in three stages (head dim 64: 128 × 192;
//! causal, 128 × 128 in four): on an H100 that beat four stages of 64 keys (head dim 128) and
//! of 128 keys (head dim 64) by 12–38% and 7–12% from 2048 tokens (BENCHMARKS.md).

use crate::prelude::*;

macro_rules! attention_forward_wgmma_body {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, launch = { $($launch:tt)* }, grid = { $($grid:tt)* }, pipeline = { $($pipeline:tt)* }, product = { $($deferred:tt)* }) => {
        $(#[$doc])*
        #[tile_kernel($($launch)*, target = sm_90a, consts(BQ = $bq, BKV = $bkv), fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            v: Global<$t, (B, HKV, SKV, HD)>,
            o: GlobalMut<$t, (B, H, SQ, HD)>,
            lse: GlobalMut<f32, (B, H, SQ)>,
            scale_log2: f32,
        ) {
            $($grid)*
            let q_s = shared::<$t>([BQ, D]).swizzle_bytes(128).panels();
            let k_s = shared::<$t>([BKV, D]).swizzle_bytes(128).panels();
            let v_s = shared::<$t>([BKV, D]).swizzle_bytes(128).panels();
            let mut s = fragment::<f32>([BQ, BKV]).warpgroup_tile([64, BKV]);
            let mut o_acc = fragment::<f32>([BQ, D]).warpgroup_tile([64, D]);
            // the running maximum (in log2 units) and sum of each of this lane's two rows
            let mut m = [-f32::INFINITY; 2];
            let mut l = [0.0f32; 2];
            copy(q.at([b, h]).tile([qt, 0], [BQ, D]), &q_s);
            // causal: the key tiles at or before the block's last query row
            for j in pipeline(0..min(cdiv(SKV, BKV), CAUSAL * cdiv((qt + 1) * BQ, BKV) + (1 - CAUSAL) * cdiv(SKV, BKV)), $($pipeline)*) {
                copy(k.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &k_s);
                copy(v.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &v_s);
                mma(&q_s, &k_s.t(), &mut s).overwrite();
                let edge = (j + 1) * BKV > SKV || (CAUSAL == 1 && (j + 1) * BKV > qt * BQ + 1);
                let mut rescale = [1.0f32; 2];
                for i in 0..2 {
                    if edge {
                        let row = qt * BQ + s.row(i);
                        for c in 0..BKV / 4 {
                            let col = j * BKV + s.col(c);
                            if col >= SKV || (CAUSAL == 1 && col > row) {
                                s[[i, c]] = -f32::INFINITY;
                            }
                        }
                    }
                    let m_new = max(m[i], s.row_max(i) * scale_log2);
                    let mut base = m_new;
                    if m_new == -f32::INFINITY {
                        base = 0.0;
                    }
                    rescale[i] = exp2(m[i] - base);
                    for c in 0..BKV / 4 {
                        s[[i, c]] = exp2_ftz(fma(s[[i, c]], scale_log2, -base));
                    }
                    l[i] = l[i] * rescale[i] + s.row_sum(i);
                    m[i] = m_new;
                }
                // apart from the softmax, which a deferred P·V of the previous tile overlaps
                for i in 0..2 {
                    for c in 0..D / 4 {
                        o_acc[[i, c]] = o_acc[[i, c]] * rescale[i];
                    }
                }
                mma(&s, &v_s, &mut o_acc)$($deferred)*;
            }
            for i in 0..2 {
                let mut inverse = 0.0f32;
                if l[i] > 0.0 {
                    inverse = 1.0f32 / l[i];
                }
                for c in 0..D / 4 {
                    o_acc[[i, c]] = o_acc[[i, c]] * inverse;
                }
                let row = qt * BQ + o_acc.row(i);
                if row < SQ && lane() % 4 == 0 {
                    lse[[b, h, row]] = m[i] * 0.6931471805599453 + log(l[i]);
                }
            }
            copy(&o_acc, o.at([b, h]).tile([qt, 0], [BQ, D]));
        }
    };
}

// Two rungs, one kernel body (`attention_forward_wgmma_body!`): the element type, head dim
// (`D`, zero-filled above the real one), causality and tiles, then how the block is launched,
// the grid statement and the pipeline's arguments.
//
// K and V through a cp.async ring that every thread fills, a block a query tile.
macro_rules! attention_forward_wgmma {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, threads = $threads:literal, bq = $bq:literal, bkv = $bkv:literal, stages = $stages:literal, min_blocks = $min_blocks:literal) => {
        attention_forward_wgmma_body!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv,
            launch = { threads = $threads, vector = 8, min_blocks = $min_blocks },
            grid = { let (qt, h, b) = grid(cdiv(SQ, BQ), H, B); },
            pipeline = { stages = $stages },
            product = {}
        );
    };
}

// Warp-specialised: a producer warpgroup issues Q's copy once a tile and K, V into the ring, so
// the two compute warpgroups only wait on mbarriers (no barrier of the whole block per key
// tile: one warpgroup's softmax runs beside the other's products), and the blocks are
// persistent. `order` is the grid statement, which sets the order the blocks take tiles in
// (the last query tiles first). Where every tile costs the same they take them in turn, a
// block every `gridDim.x`, query tiles along x so the tiles running at a time share their
// heads' K and V in L2. A causal tile costs from one key tile to all of them; at head dims 64
// and 128 the blocks take each next tile from a counter as they finish one (`.dynamic()`), in
// groups of 8 heads with the query tiles slowest within a group (`.grouped(8)`): taken in
// turn, the blocks' work would differ by up to 30%; with the query tiles slowest over all heads
// (balanced by `.zigzag()`) the 132 tiles running at a time read 1.2 GB of K and V from DRAM at
// 4096 tokens where along x they read 0.25 GB (ncu, H100) — but along x all of them read the
// same head's K and V at once, slower from 8192 tokens; 8 heads a group ran best of 1, 2, 4 and
// 8 at head dim 128, and 16 of 4, 8 and 16 at 64 (+1–2% over 8 to 4096 tokens, level beyond, on
// an H200; BENCHMARKS.md). At head dim 256 the query tiles slowest, in zigzag, ran best.
// P·V is deferred behind the next tile's Q·Kᵀ (the module doc).
macro_rules! attention_forward_wgmma_producers {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, stages = $stages:literal, copies = $copies:ident, order = { $($order:tt)* }) => {
        attention_forward_wgmma_body!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv,
            launch = { threads = 256, vector = 8 },
            grid = { $($order)* let qt = cdiv(SQ, BQ) - 1 - rt; },
            pipeline = { stages = $stages, producers = 128, copies = $copies },
            product = { .deferred() }
        );
    };
}

attention_forward_wgmma!(
    /// BF16, head dim ≤ 64, sm_90a.
    attention_forward_wgmma_bf16_d64, bf16, d = 64, causal = 0, threads = 256, bq = 128, bkv = 256, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// BF16, head dim ≤ 64, causal, sm_90a.
    attention_forward_wgmma_bf16_d64_causal, bf16, d = 64, causal = 1, threads = 128, bq = 64, bkv = 64, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// BF16, head dim 65 to 128, sm_90a.
    attention_forward_wgmma_bf16_d128, bf16, d = 128, causal = 0, threads = 256, bq = 128, bkv = 128, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// BF16, head dim 65 to 128, causal, sm_90a.
    attention_forward_wgmma_bf16_d128_causal, bf16, d = 128, causal = 1, threads = 256, bq = 128, bkv = 128, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim ≤ 64, sm_90a.
    attention_forward_wgmma_f16_d64, f16, d = 64, causal = 0, threads = 256, bq = 128, bkv = 256, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim ≤ 64, causal, sm_90a.
    attention_forward_wgmma_f16_d64_causal, f16, d = 64, causal = 1, threads = 128, bq = 64, bkv = 64, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim 65 to 128, sm_90a.
    attention_forward_wgmma_f16_d128, f16, d = 128, causal = 0, threads = 256, bq = 128, bkv = 128, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim 65 to 128, causal, sm_90a.
    attention_forward_wgmma_f16_d128_causal, f16, d = 128, causal = 1, threads = 256, bq = 128, bkv = 128, stages = 3, min_blocks = 1
);
attention_forward_wgmma_producers!(
    /// BF16, head dim ≤ 64, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d64, bf16, d = 64, causal = 0, bq = 128, bkv = 192, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// BF16, head dim ≤ 64, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d64_causal, bf16, d = 64, causal = 1, bq = 128, bkv = 128, stages = 4, copies = tma,
    order = { let (rt, hb) = grid(cdiv(SQ, BQ), H * B).grouped(16).dynamic(); let h = hb % H; let b = hb / H; }
);
attention_forward_wgmma_producers!(
    /// BF16, head dim 65 to 128, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d128, bf16, d = 128, causal = 0, bq = 128, bkv = 128, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// BF16, head dim 65 to 128, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d128_causal, bf16, d = 128, causal = 1, bq = 128, bkv = 128, stages = 3, copies = tma,
    order = { let (rt, hb) = grid(cdiv(SQ, BQ), H * B).grouped(8).dynamic(); let h = hb % H; let b = hb / H; }
);
attention_forward_wgmma_producers!(
    /// F16, head dim ≤ 64, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d64, f16, d = 64, causal = 0, bq = 128, bkv = 192, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// F16, head dim ≤ 64, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d64_causal, f16, d = 64, causal = 1, bq = 128, bkv = 128, stages = 4, copies = tma,
    order = { let (rt, hb) = grid(cdiv(SQ, BQ), H * B).grouped(16).dynamic(); let h = hb % H; let b = hb / H; }
);
attention_forward_wgmma_producers!(
    /// F16, head dim 65 to 128, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d128, f16, d = 128, causal = 0, bq = 128, bkv = 128, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// F16, head dim 65 to 128, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d128_causal, f16, d = 128, causal = 1, bq = 128, bkv = 128, stages = 3, copies = tma,
    order = { let (rt, hb) = grid(cdiv(SQ, BQ), H * B).grouped(8).dynamic(); let h = hb % H; let b = hb / H; }
);

// Head dim 256: a warpgroup's 64 × 256 f32 output is 128 registers a lane, so at most 64 keys a
// tile (S: 32 more). Both rungs take three stages (wgmma reads a stage while the next two load;
// the producers fall back to a cp.async ring where TMA cannot read the rows), so at most 48
// keys a tile: Q 64 KiB + 3 × 48 KiB of K and V. On an H100 48 keys beat 32 by 15–22% from
// 2048 tokens (the output's rescale and the wgmma issue costs spread over more keys;
// BENCHMARKS.md).
attention_forward_wgmma!(
    /// BF16, head dim 129 to 256, sm_90a.
    attention_forward_wgmma_bf16_d256, bf16, d = 256, causal = 0, threads = 256, bq = 128, bkv = 48, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// BF16, head dim 129 to 256, causal, sm_90a.
    attention_forward_wgmma_bf16_d256_causal, bf16, d = 256, causal = 1, threads = 256, bq = 128, bkv = 48, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim 129 to 256, sm_90a.
    attention_forward_wgmma_f16_d256, f16, d = 256, causal = 0, threads = 256, bq = 128, bkv = 48, stages = 3, min_blocks = 1
);
attention_forward_wgmma!(
    /// F16, head dim 129 to 256, causal, sm_90a.
    attention_forward_wgmma_f16_d256_causal, f16, d = 256, causal = 1, threads = 256, bq = 128, bkv = 48, stages = 3, min_blocks = 1
);
attention_forward_wgmma_producers!(
    /// BF16, head dim 129 to 256, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d256, bf16, d = 256, causal = 0, bq = 128, bkv = 48, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// BF16, head dim 129 to 256, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_bf16_d256_causal, bf16, d = 256, causal = 1, bq = 128, bkv = 48, stages = 3, copies = tma,
    order = { let (h, b, rt) = grid(H, B, cdiv(SQ, BQ)).zigzag(); }
);
attention_forward_wgmma_producers!(
    /// F16, head dim 129 to 256, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d256, f16, d = 256, causal = 0, bq = 128, bkv = 48, stages = 3, copies = tma,
    order = { let (rt, h, b) = grid(cdiv(SQ, BQ), H, B); }
);
attention_forward_wgmma_producers!(
    /// F16, head dim 129 to 256, causal, sm_90a, TMA producers.
    attention_forward_wgmma_tma_f16_d256_causal, f16, d = 256, causal = 1, bq = 128, bkv = 48, stages = 3, copies = tma,
    order = { let (h, b, rt) = grid(H, B, cdiv(SQ, BQ)).zigzag(); }
);
