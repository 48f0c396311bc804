//! FlashAttention-2's backward pass on the tensor cores — `mma.sync` (every GPU since Ampere)
//! or `wgmma` (sm_90a, the same kernel bodies with warpgroup tiles): dQ, dK and dV from Q, K,
//! V, the output O, its gradient dO and the forward's log-sum-exp, with the probabilities
//! recomputed tile by tile and never stored.
//!
//! Three launches (four at head dim 256), none with atomics:
//! 1. `delta`: Δᵢ = Σ dOᵢ·Oᵢ per query row (the row's Σⱼ Pᵢⱼ·dPᵢⱼ), one warp a row.
//! 2. `dkdv`: a block per BKV keys of one (batch, K/V head); its warps own WKV keys each, and it
//!    walks every query tile of every query head that shares the K/V head (grouped-query
//!    attention sums them here). Per tile it computes the scores transposed, Sᵀ = K·Qᵀ, so the
//!    probabilities come out with keys on rows — Pᵀ = exp2(Sᵀ·scale − lse) — and both products
//!    that follow take them from registers: dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − Δ),
//!    dK += dSᵀ·Q. No transpose through shared memory. The two products start from −lse/scale
//!    and −Δ of each query rather than 0, so no per-query value stays live across them (what
//!    kept the kernel from spilling). At head dim 256 (wgmma) dK and dV come from a kernel
//!    each (`only = dk | dv`: [`KeyGradients::Apart`]), both computing Sᵀ.
//! 3. `dq`: a block per BQ query rows; per key tile S = Q·Kᵀ, P = exp2(S·scale − lse),
//!    dP = dO·Vᵀ, dS = P∘(dP − Δ), dQ += dS·K.
//!
//! Tails need no masks: keys past SKV are zero-filled (their rows of dK, dV are not stored, and
//! a zero K row adds nothing to dQ), and a query past SQ gets lse = +∞, so its P is 0. Causal
//! tiles that straddle the diagonal mask the keys after each query, as the forward does.

use super::AttentionElement;
use super::AttentionError;
use crate::prelude::*;
use crate::{Input, Output};

// Σ dO·O of each query row, in f32 from the 16-bit values: a warp per row, each lane a strided
// slice of the head dim, then the warp's sum.
macro_rules! attention_backward_delta {
    ($(#[$doc:meta])* $name:ident, $t:ident) => {
        $(#[$doc])*
        #[tile_kernel(threads = 256, vector = 1, consts(WARPS = 8), require(WARPS * 32 == THREADS))]
        pub fn $name(
            o: Global<$t, (B, H, SQ, HD)>,
            dout: Global<$t, (B, H, SQ, HD)>,
            delta: GlobalMut<f32, (B, H, SQ)>,
        ) {
            let (rt, h, b) = grid(cdiv(SQ, WARPS), H, B);
            let row = rt * WARPS + thread_index() / 32;
            let mut sum = 0.0f32;
            if row < SQ {
                for k in 0..cdiv(HD, 32) {
                    let c = k * 32 + lane();
                    if c < HD {
                        sum += (o[[b, h, row, c]] as f32) * (dout[[b, h, row, c]] as f32);
                    }
                }
            }
            let total = warp_sum(sum);
            if row < SQ && lane() == 0 {
                delta[[b, h, row]] = total;
            }
        }
    };
}

// dK and dV of BKV keys of one (batch, K/V head), one kernel body for both tensor cores: on
// mma.sync warp tiles of WKV keys (a lane holds WKV / 8 of their rows); with `wgmma`,
// warpgroup tiles of 64 keys (a lane holds 2) reading 128-byte swizzled panels, sm_90a.
//
// Sᵀ and dPᵀ overwrite their fragments (`.overwrite()`) and each query's −lse and −Δ, held in
// `start` and `minus_delta` across the products, are applied after them — in the exponent's
// FFMA and one FADD — instead of being written into every element first: on an H100 +7–13% at
// head dim 128 (causal or not), +0–2% at 64; 2–4% slower at 64 causal from 8192 tokens, whose
// tuned tile (two blocks of 256 threads an SM: 128 registers a lane) the two arrays made spill,
// so it now takes 64 keys on one warpgroup (BENCHMARKS.md). The kernels of one of dK and dV
// (head dim 256) still start the products from −lse/scale and −Δ.
macro_rules! attention_backward_dkdv {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, threads = $threads:literal, bq = $bq:literal, bkv = $bkv:literal, wkv = $wkv:literal, stages = $stages:literal $(, only = $only:ident)?) => {
        attention_backward_dkdv!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv, pipeline = { stages = $stages },
            launch = { threads = $threads, vector = 8, consts(BQ = $bq, BKV = $bkv, WKV = $wkv) },
            tile = warp_tile, rows = { WKV / 8 }, layout = { .swizzle_bytes(128) }, only = [$($only)?]
        );
    };
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, wgmma, threads = $threads:literal, $(min_blocks = $min_blocks:literal,)? bq = $bq:literal, bkv = $bkv:literal, stages = $stages:literal $(, producers = $producers:literal)? $(, only = $only:ident)?) => {
        attention_backward_dkdv!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv, pipeline = { stages = $stages $(, producers = $producers, copies = tma)? },
            launch = { threads = $threads, vector = 8, $(min_blocks = $min_blocks,)? target = sm_90a, consts(BQ = $bq, BKV = $bkv, WKV = 64) },
            tile = warpgroup_tile, rows = { 2 }, layout = { .swizzle_bytes(128).panels() }, only = [$($only)?]
        );
    };
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, pipeline = { $($pipeline:tt)* }, launch = { $($launch:tt)* }, tile = $tile:ident, rows = { $($rows:tt)* }, layout = { $($layout:tt)* }, only = []) => {
        $(#[$doc])*
        #[tile_kernel($($launch)*, fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            v: Global<$t, (B, HKV, SKV, HD)>,
            dout: Global<$t, (B, H, SQ, HD)>,
            lse: Global<f32, (B, H, SQ)>,
            delta: Global<f32, (B, H, SQ)>,
            dk: GlobalMut<$t, (B, HKV, SKV, HD)>,
            dv: GlobalMut<$t, (B, HKV, SKV, HD)>,
            scale_log2: f32,
            scale: f32,
        ) {
            let (kt, hk, b) = grid(cdiv(SKV, BKV), HKV, B);
            let k_s = shared::<$t>([BKV, D])$($layout)*;
            let v_s = shared::<$t>([BKV, D])$($layout)*;
            let q_s = shared::<$t>([BQ, D])$($layout)*;
            let do_s = shared::<$t>([BQ, D])$($layout)*;
            let mut pt = fragment::<f32>([BKV, BQ]).$tile([WKV, BQ]);
            let mut dpt = fragment::<f32>([BKV, BQ]).$tile([WKV, BQ]);
            let mut dk_acc = fragment::<f32>([BKV, D]).$tile([WKV, D]);
            let mut dv_acc = fragment::<f32>([BKV, D]).$tile([WKV, D]);
            copy(k.at([b, hk]).tile([kt, 0], [BKV, D]), &k_s);
            copy(v.at([b, hk]).tile([kt, 0], [BKV, D]), &v_s);
            let inverse_scale = 1.0f32 / scale;
            // causal: the query tiles from the one that holds the block's first key
            let first = CAUSAL * min(kt * BKV / BQ, cdiv(SQ, BQ));
            let tiles = max(cdiv(SQ, BQ) - first, 1);
            // every query tile of every query head that reads this K/V head
            for j in pipeline(0..(H / HKV) * (cdiv(SQ, BQ) - first), $($pipeline)*) {
                copy(q.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &q_s);
                copy(dout.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &do_s);
                let h = hk * (H / HKV) + j / tiles;
                let q0 = (first + j % tiles) * BQ;
                // each query's (column's) −lse in log2 units and −Δ, for after the products
                let mut start = [0.0f32; BQ / 4];
                let mut minus_delta = [0.0f32; BQ / 4];
                for c in 0..BQ / 4 {
                    let col = q0 + pt.col(c);
                    // a query past SQ starts at -inf: its probabilities are 0
                    start[c] = -f32::INFINITY;
                    if col < SQ {
                        start[c] = -lse[[b, h, col]] * inverse_scale * scale_log2;
                        minus_delta[c] = -delta[[b, h, col]];
                    }
                }
                mma(&k_s, &q_s.t(), &mut pt).overwrite();
                mma(&v_s, &do_s.t(), &mut dpt).overwrite();
                // causal: a tile whose last key is after its first query masks keys after queries
                let edge = CAUSAL == 1 && (kt + 1) * BKV > q0 + 1;
                for c in 0..BQ / 4 {
                    for i in 0..$($rows)* {
                        let mut p = exp2(fma(pt[[i, c]], scale_log2, start[c]));
                        if edge && kt * BKV + pt.row(i) > q0 + pt.col(c) {
                            p = 0.0;
                        }
                        pt[[i, c]] = p;
                        dpt[[i, c]] = p * (dpt[[i, c]] + minus_delta[c]);
                    }
                }
                mma(&pt, &do_s, &mut dv_acc);
                mma(&dpt, &q_s, &mut dk_acc);
            }
            for i in 0..$($rows)* {
                for c in 0..D / 4 {
                    dk_acc[[i, c]] = dk_acc[[i, c]] * scale;
                }
            }
            copy(&dk_acc, dk.at([b, hk]).tile([kt, 0], [BKV, D]));
            copy(&dv_acc, dv.at([b, hk]).tile([kt, 0], [BKV, D]));
        }
    };
    // dK alone (head dim 256: dK's and dV's accumulators together would not fit a lane's
    // registers): Sᵀ and dPᵀ as above, dK += dSᵀ·Q
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, pipeline = { $($pipeline:tt)* }, launch = { $($launch:tt)* }, tile = $tile:ident, rows = { $($rows:tt)* }, layout = { $($layout:tt)* }, only = [dk]) => {
        $(#[$doc])*
        #[tile_kernel($($launch)*, fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            v: Global<$t, (B, HKV, SKV, HD)>,
            dout: Global<$t, (B, H, SQ, HD)>,
            lse: Global<f32, (B, H, SQ)>,
            delta: Global<f32, (B, H, SQ)>,
            dk: GlobalMut<$t, (B, HKV, SKV, HD)>,
            scale_log2: f32,
            scale: f32,
        ) {
            let (kt, hk, b) = grid(cdiv(SKV, BKV), HKV, B);
            let k_s = shared::<$t>([BKV, D])$($layout)*;
            let v_s = shared::<$t>([BKV, D])$($layout)*;
            let q_s = shared::<$t>([BQ, D])$($layout)*;
            let do_s = shared::<$t>([BQ, D])$($layout)*;
            let mut pt = fragment::<f32>([BKV, BQ]).$tile([WKV, BQ]);
            let mut dpt = fragment::<f32>([BKV, BQ]).$tile([WKV, BQ]);
            let mut dk_acc = fragment::<f32>([BKV, D]).$tile([WKV, D]);
            copy(k.at([b, hk]).tile([kt, 0], [BKV, D]), &k_s);
            copy(v.at([b, hk]).tile([kt, 0], [BKV, D]), &v_s);
            let inverse_scale = 1.0f32 / scale;
            // causal: the query tiles from the one that holds the block's first key
            let first = CAUSAL * min(kt * BKV / BQ, cdiv(SQ, BQ));
            let tiles = max(cdiv(SQ, BQ) - first, 1);
            // every query tile of every query head that reads this K/V head
            for j in pipeline(0..(H / HKV) * (cdiv(SQ, BQ) - first), $($pipeline)*) {
                copy(q.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &q_s);
                copy(dout.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &do_s);
                let h = hk * (H / HKV) + j / tiles;
                let q0 = (first + j % tiles) * BQ;
                for c in 0..BQ / 4 {
                    let col = q0 + pt.col(c);
                    let mut start = -f32::INFINITY;
                    let mut minus_delta = 0.0f32;
                    if col < SQ {
                        start = -lse[[b, h, col]] * inverse_scale;
                        minus_delta = -delta[[b, h, col]];
                    }
                    for i in 0..$($rows)* {
                        pt[[i, c]] = start;
                        dpt[[i, c]] = minus_delta;
                    }
                }
                mma(&k_s, &q_s.t(), &mut pt);
                mma(&v_s, &do_s.t(), &mut dpt);
                let edge = CAUSAL == 1 && (kt + 1) * BKV > q0 + 1;
                for c in 0..BQ / 4 {
                    for i in 0..$($rows)* {
                        let mut p = exp2(pt[[i, c]] * scale_log2);
                        if edge && kt * BKV + pt.row(i) > q0 + pt.col(c) {
                            p = 0.0;
                        }
                        dpt[[i, c]] = p * dpt[[i, c]];
                    }
                }
                mma(&dpt, &q_s, &mut dk_acc);
            }
            for i in 0..$($rows)* {
                for c in 0..D / 4 {
                    dk_acc[[i, c]] = dk_acc[[i, c]] * scale;
                }
            }
            copy(&dk_acc, dk.at([b, hk]).tile([kt, 0], [BKV, D]));
        }
    };
    // dV alone: Sᵀ as above, dV += Pᵀ·dO (neither V nor Δ read)
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, pipeline = { $($pipeline:tt)* }, launch = { $($launch:tt)* }, tile = $tile:ident, rows = { $($rows:tt)* }, layout = { $($layout:tt)* }, only = [dv]) => {
        $(#[$doc])*
        #[tile_kernel($($launch)*, fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            dout: Global<$t, (B, H, SQ, HD)>,
            lse: Global<f32, (B, H, SQ)>,
            dv: GlobalMut<$t, (B, HKV, SKV, HD)>,
            scale_log2: f32,
            scale: f32,
        ) {
            let (kt, hk, b) = grid(cdiv(SKV, BKV), HKV, B);
            let k_s = shared::<$t>([BKV, D])$($layout)*;
            let q_s = shared::<$t>([BQ, D])$($layout)*;
            let do_s = shared::<$t>([BQ, D])$($layout)*;
            let mut pt = fragment::<f32>([BKV, BQ]).$tile([WKV, BQ]);
            let mut dv_acc = fragment::<f32>([BKV, D]).$tile([WKV, D]);
            copy(k.at([b, hk]).tile([kt, 0], [BKV, D]), &k_s);
            let inverse_scale = 1.0f32 / scale;
            // causal: the query tiles from the one that holds the block's first key
            let first = CAUSAL * min(kt * BKV / BQ, cdiv(SQ, BQ));
            let tiles = max(cdiv(SQ, BQ) - first, 1);
            // every query tile of every query head that reads this K/V head
            for j in pipeline(0..(H / HKV) * (cdiv(SQ, BQ) - first), $($pipeline)*) {
                copy(q.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &q_s);
                copy(dout.at([b, hk * (H / HKV) + j / tiles]).tile([first + j % tiles, 0], [BQ, D]), &do_s);
                let h = hk * (H / HKV) + j / tiles;
                let q0 = (first + j % tiles) * BQ;
                for c in 0..BQ / 4 {
                    let col = q0 + pt.col(c);
                    let mut start = -f32::INFINITY;
                    if col < SQ {
                        start = -lse[[b, h, col]] * inverse_scale;
                    }
                    for i in 0..$($rows)* {
                        pt[[i, c]] = start;
                    }
                }
                mma(&k_s, &q_s.t(), &mut pt);
                let edge = CAUSAL == 1 && (kt + 1) * BKV > q0 + 1;
                for c in 0..BQ / 4 {
                    for i in 0..$($rows)* {
                        let mut p = exp2(pt[[i, c]] * scale_log2);
                        if edge && kt * BKV + pt.row(i) > q0 + pt.col(c) {
                            p = 0.0;
                        }
                        pt[[i, c]] = p;
                    }
                }
                mma(&pt, &do_s, &mut dv_acc);
            }
            copy(&dv_acc, dv.at([b, hk]).tile([kt, 0], [BKV, D]));
        }
    };
}

// dQ of BQ query rows of one (batch, head), on mma.sync (warp tiles of WQ rows) or wgmma
// (warpgroup tiles of 64), as `attention_backward_dkdv!`.
macro_rules! attention_backward_dq {
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, threads = $threads:literal, bq = $bq:literal, wq = $wq:literal, bkv = $bkv:literal, stages = $stages:literal) => {
        attention_backward_dq!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv, pipeline = { stages = $stages }, order = {},
            launch = { threads = $threads, vector = 8, consts(BQ = $bq, BKV = $bkv, WQ = $wq) },
            tile = warp_tile, rows = { WQ / 8 }, layout = { .swizzle_bytes(128) }
        );
    };
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, wgmma, threads = $threads:literal, $(min_blocks = $min_blocks:literal,)? bq = $bq:literal, bkv = $bkv:literal, stages = $stages:literal $(, producers = $producers:literal)? $(, order = $order:ident)?) => {
        attention_backward_dq!(
            $(#[$doc])* $name, $t, d = $d, causal = $causal, bq = $bq, bkv = $bkv, pipeline = { stages = $stages $(, producers = $producers, copies = tma)? }, order = { $(.$order())? },
            launch = { threads = $threads, vector = 8, $(min_blocks = $min_blocks,)? target = sm_90a, consts(BQ = $bq, BKV = $bkv, WQ = 64) },
            tile = warpgroup_tile, rows = { 2 }, layout = { .swizzle_bytes(128).panels() }
        );
    };
    ($(#[$doc:meta])* $name:ident, $t:ident, d = $d:literal, causal = $causal:literal, bq = $bq:literal, bkv = $bkv:literal, pipeline = { $($pipeline:tt)* }, order = { $($order:tt)* }, launch = { $($launch:tt)* }, tile = $tile:ident, rows = { $($rows:tt)* }, layout = { $($layout:tt)* }) => {
        $(#[$doc])*
        #[tile_kernel($($launch)*, fixed(D = $d, CAUSAL = $causal), require(HD <= D))]
        pub fn $name(
            q: Global<$t, (B, H, SQ, HD)>,
            k: Global<$t, (B, HKV, SKV, HD)>,
            v: Global<$t, (B, HKV, SKV, HD)>,
            dout: Global<$t, (B, H, SQ, HD)>,
            lse: Global<f32, (B, H, SQ)>,
            delta: Global<f32, (B, H, SQ)>,
            dq: GlobalMut<$t, (B, H, SQ, HD)>,
            scale_log2: f32,
            scale: f32,
        ) {
            // the last query tiles first: causal, they have the most keys, so none is left to run
            // alone at the end
            let (rt, h, b) = grid(cdiv(SQ, BQ), H, B)$($order)*;
            let qt = cdiv(SQ, BQ) - 1 - rt;
            let q_s = shared::<$t>([BQ, D])$($layout)*;
            let do_s = shared::<$t>([BQ, D])$($layout)*;
            let k_s = shared::<$t>([BKV, D])$($layout)*;
            let v_s = shared::<$t>([BKV, D])$($layout)*;
            let mut s = fragment::<f32>([BQ, BKV]).$tile([WQ, BKV]);
            let mut dp = fragment::<f32>([BQ, BKV]).$tile([WQ, BKV]);
            let mut dq_acc = fragment::<f32>([BQ, D]).$tile([WQ, D]);
            // this lane's rows: the log-sum-exp in log2 units (+inf past SQ: P = 0) and Δ
            let mut lse_row = [f32::INFINITY; $($rows)*];
            let mut delta_row = [0.0f32; $($rows)*];
            for i in 0..$($rows)* {
                let row = qt * BQ + s.row(i);
                if row < SQ {
                    lse_row[i] = lse[[b, h, row]] * 1.4426950408889634;
                    delta_row[i] = delta[[b, h, row]];
                }
            }
            copy(q.at([b, h]).tile([qt, 0], [BQ, D]), &q_s);
            copy(dout.at([b, h]).tile([qt, 0], [BQ, D]), &do_s);
            // causal: the key tiles at or before the block's last query row
            for j in pipeline(0..min(cdiv(SKV, BKV), CAUSAL * cdiv((qt + 1) * BQ, BKV) + (1 - CAUSAL) * cdiv(SKV, BKV)), $($pipeline)*) {
                copy(k.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &k_s);
                copy(v.at([b, h / (H / HKV)]).tile([j, 0], [BKV, D]), &v_s);
                mma(&q_s, &k_s.t(), &mut s).overwrite();
                mma(&do_s, &v_s.t(), &mut dp).overwrite();
                // causal: a tile whose last key is after the block's first query masks
                let edge = CAUSAL == 1 && (j + 1) * BKV > qt * BQ + 1;
                for i in 0..$($rows)* {
                    let row = qt * BQ + s.row(i);
                    for c in 0..BKV / 4 {
                        let mut p = exp2(fma(s[[i, c]], scale_log2, -lse_row[i]));
                        if edge && j * BKV + s.col(c) > row {
                            p = 0.0;
                        }
                        dp[[i, c]] = p * (dp[[i, c]] - delta_row[i]);
                    }
                }
                mma(&dp, &k_s, &mut dq_acc);
            }
            for i in 0..$($rows)* {
                for c in 0..D / 4 {
                    dq_acc[[i, c]] = dq_acc[[i, c]] * scale;
                }
            }
            copy(&dq_acc, dq.at([b, h]).tile([qt, 0], [BQ, D]));
        }
    };
}

attention_backward_delta!(
    /// Δ = Σ dO·O per query row, BF16.
    attention_backward_delta_bf16, bf16
);
attention_backward_delta!(
    /// Δ = Σ dO·O per query row, F16.
    attention_backward_delta_f16, f16
);

// Four warps of 16 rows each: blocks of 64 keys (dK, dV) or 64 query rows (dQ), walking tiles
// of 64 rows — 16 (dK, dV) and 32 (dQ) at head dim 128, where the two f32 accumulators of
// 16 × 128 a warp and the K and V fragments ptxas keeps in registers across the loop leave
// fewer registers (32 spilled). Eight warps on 128-row blocks (head dim 64) measured 8-15%
// slower on an H100: one block of 253 registers a thread fills an SM, where two of four warps
// overlap better.
macro_rules! attention_backward_kernels {
    ($t:ident, $dkdv64:ident, $dkdv64c:ident, $dkdv128:ident, $dkdv128c:ident, $dq64:ident, $dq64c:ident, $dq128:ident, $dq128c:ident) => {
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim ≤ 64.")]
            $dkdv64,
            $t,
            d = 64,
            causal = 0,
            threads = 128,
            bq = 64,
            bkv = 64,
            wkv = 16,
            stages = 3
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim ≤ 64, causal.")]
            $dkdv64c,
            $t,
            d = 64,
            causal = 1,
            threads = 128,
            bq = 64,
            bkv = 64,
            wkv = 16,
            stages = 3
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim 65 to 128.")]
            $dkdv128,
            $t,
            d = 128,
            causal = 0,
            threads = 128,
            bq = 16,
            bkv = 64,
            wkv = 16,
            stages = 3
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim 65 to 128, causal.")]
            $dkdv128c,
            $t,
            d = 128,
            causal = 1,
            threads = 128,
            bq = 16,
            bkv = 64,
            wkv = 16,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim ≤ 64.")]
            // `tessera tune`'s winner on an H100 (BENCHMARKS.md): 18% faster than four warps
            // of 16 rows over 64 keys
            $dq64,
            $t,
            d = 64,
            causal = 0,
            threads = 64,
            bq = 64,
            wq = 32,
            bkv = 32,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim ≤ 64, causal.")]
            $dq64c,
            $t,
            d = 64,
            causal = 1,
            threads = 128,
            bq = 64,
            wq = 16,
            bkv = 64,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 65 to 128.")]
            $dq128,
            $t,
            d = 128,
            causal = 0,
            threads = 128,
            bq = 64,
            wq = 16,
            bkv = 32,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 65 to 128, causal.")]
            $dq128c,
            $t,
            d = 128,
            causal = 1,
            threads = 128,
            bq = 64,
            wq = 16,
            bkv = 32,
            stages = 3
        );
    };
}

attention_backward_kernels!(
    bf16,
    attention_backward_dkdv_bf16_d64,
    attention_backward_dkdv_bf16_d64_causal,
    attention_backward_dkdv_bf16_d128,
    attention_backward_dkdv_bf16_d128_causal,
    attention_backward_dq_bf16_d64,
    attention_backward_dq_bf16_d64_causal,
    attention_backward_dq_bf16_d128,
    attention_backward_dq_bf16_d128_causal
);
attention_backward_kernels!(
    f16,
    attention_backward_dkdv_f16_d64,
    attention_backward_dkdv_f16_d64_causal,
    attention_backward_dkdv_f16_d128,
    attention_backward_dkdv_f16_d128_causal,
    attention_backward_dq_f16_d64,
    attention_backward_dq_f16_d64_causal,
    attention_backward_dq_f16_d128,
    attention_backward_dq_f16_d128_causal
);

// The same two kernels on wgmma (sm_90a): a warpgroup owns 64 keys (dK, dV) or 64 query rows
// (dQ), two warpgroups a block, so a block's 128 rows share each tile of the other side that
// comes through the ring. Sᵀ and dPᵀ (dK, dV) or S and dP (dQ) are wgmma chains reading both
// operands from the 128-byte swizzled panels; the products that follow take Pᵀ, dSᵀ or dS
// rounded to 16 bits in registers, with dO, Q or K read MN-major. A lane's accumulators: at
// head dim 128, 2 × 32 f32 for the tiles of 64 columns and 2 × 64 for dK, dV (192, one block
// an SM) or 2 × 16 + 64 for dQ. The tiles are `tessera tune`'s winners on an H200 at 4096
// tokens (BENCHMARKS.md): at head dim 64 the dK, dV kernel walks 32 queries a tile (96
// registers, two blocks an SM: 29% faster than 64). The causal kernels' are the H100's winners
// (`min_blocks = 2`, two blocks an SM, 8–20% faster than the tiles of the others): their
// blocks' walks differ in length, and two blocks an SM fill in for each other's short ones;
// the dK, dV kernel at head dim 64 causal on one warpgroup of 64 keys since S and dP are
// overwritten (see `attention_backward_dkdv!`), walking 64 queries a tile.
//
// Every dQ kernel, and the dK, dV kernel at head dim 128, is fed by a producer warpgroup's TMA
// copies (`producers = 128`) and so persistent: the compute warpgroups wait on mbarriers, never
// on a barrier of the whole block per tile. Causal, the dQ blocks take each next query tile
// from a counter (`order = dynamic`), the last tiles (the most keys) first. On an H100 against
// the cp.async ring (BENCHMARKS.md): the backward +16–19% at head dim 128 (causal +10–13%),
// +7–9% at 64 (causal +7–10%) from 2048 to 16384 tokens; dQ at head dim 64 with 64 keys a tile
// (causal: 128), `tessera tune`'s winners at 16384 tokens. Not the dK, dV kernels at head dim
// 64 (17–25% slower with producers), nor the causal one at 128 (2–3% slower, also with
// `dynamic`).
macro_rules! attention_backward_wgmma_kernels {
    ($t:ident, $dkdv64:ident, $dkdv64c:ident, $dkdv128:ident, $dkdv128c:ident, $dq64:ident, $dq64c:ident, $dq128:ident, $dq128c:ident) => {
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim ≤ 64, sm_90a (wgmma).")]
            $dkdv64,
            $t,
            d = 64,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 32,
            bkv = 128,
            stages = 3
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim ≤ 64, causal, sm_90a (wgmma).")]
            $dkdv64c,
            $t,
            d = 64,
            causal = 1,
            wgmma,
            threads = 128,
            min_blocks = 2,
            bq = 64,
            bkv = 64,
            stages = 3
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim 65 to 128, sm_90a (wgmma).")]
            $dkdv128,
            $t,
            d = 128,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 64,
            bkv = 128,
            stages = 3,
            producers = 128
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, dV, ", stringify!($t), ", head dim 65 to 128, causal, sm_90a (wgmma).")]
            $dkdv128c,
            $t,
            d = 128,
            causal = 1,
            wgmma,
            threads = 128,
            min_blocks = 2,
            bq = 32,
            bkv = 64,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim ≤ 64, sm_90a (wgmma).")]
            $dq64,
            $t,
            d = 64,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 128,
            bkv = 64,
            stages = 3,
            producers = 128
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim ≤ 64, causal, sm_90a (wgmma).")]
            $dq64c,
            $t,
            d = 64,
            causal = 1,
            wgmma,
            threads = 128,
            min_blocks = 2,
            bq = 64,
            bkv = 128,
            stages = 3,
            producers = 128,
            order = dynamic
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 65 to 128, sm_90a (wgmma).")]
            $dq128,
            $t,
            d = 128,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 128,
            bkv = 64,
            stages = 3,
            producers = 128
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 65 to 128, causal, sm_90a (wgmma).")]
            $dq128c,
            $t,
            d = 128,
            causal = 1,
            wgmma,
            threads = 256,
            bq = 128,
            bkv = 64,
            stages = 3,
            producers = 128,
            order = dynamic
        );
    };
}

attention_backward_wgmma_kernels!(
    bf16,
    attention_backward_wgmma_dkdv_bf16_d64,
    attention_backward_wgmma_dkdv_bf16_d64_causal,
    attention_backward_wgmma_dkdv_bf16_d128,
    attention_backward_wgmma_dkdv_bf16_d128_causal,
    attention_backward_wgmma_dq_bf16_d64,
    attention_backward_wgmma_dq_bf16_d64_causal,
    attention_backward_wgmma_dq_bf16_d128,
    attention_backward_wgmma_dq_bf16_d128_causal
);
attention_backward_wgmma_kernels!(
    f16,
    attention_backward_wgmma_dkdv_f16_d64,
    attention_backward_wgmma_dkdv_f16_d64_causal,
    attention_backward_wgmma_dkdv_f16_d128,
    attention_backward_wgmma_dkdv_f16_d128_causal,
    attention_backward_wgmma_dq_f16_d64,
    attention_backward_wgmma_dq_f16_d64_causal,
    attention_backward_wgmma_dq_f16_d128,
    attention_backward_wgmma_dq_f16_d128_causal
);

// Head dim 256 on wgmma: a warpgroup's 64 × 256 f32 gradient is 128 registers a lane, so dK and
// dV come from a kernel each (dK: Sᵀ, dPᵀ and dSᵀ·Q; dV: Sᵀ and Pᵀ·dO), two warpgroups on 128
// keys walking 32 queries a tile (dK: 224 KiB of shared memory, dV: 160 KiB), and dQ from 128
// query rows walking 32 keys a tile (224 KiB): `tessera tune`'s searches on an H100 at 4096
// tokens kept all five (the next best 21–33% slower; BENCHMARKS.md). The causal dQ kernel is
// fed by TMA producers and takes its query tiles from a counter (`order = dynamic`): +3% at 2048
// tokens, +26% at 8192 on an H200; non-causal, producers lost 12–13%, and on the dK, dV kernels
// they changed nothing.
macro_rules! attention_backward_wgmma_d256_kernels {
    ($t:ident, $dk:ident, $dkc:ident, $dv:ident, $dvc:ident, $dq:ident, $dqc:ident) => {
        attention_backward_dkdv!(
            #[doc = concat!("dK, ", stringify!($t), ", head dim 129 to 256, sm_90a (wgmma).")]
            $dk,
            $t,
            d = 256,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 32,
            bkv = 128,
            stages = 3,
            only = dk
        );
        attention_backward_dkdv!(
            #[doc = concat!("dK, ", stringify!($t), ", head dim 129 to 256, causal, sm_90a (wgmma).")]
            $dkc,
            $t,
            d = 256,
            causal = 1,
            wgmma,
            threads = 256,
            bq = 32,
            bkv = 128,
            stages = 3,
            only = dk
        );
        attention_backward_dkdv!(
            #[doc = concat!("dV, ", stringify!($t), ", head dim 129 to 256, sm_90a (wgmma).")]
            $dv,
            $t,
            d = 256,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 32,
            bkv = 128,
            stages = 3,
            only = dv
        );
        attention_backward_dkdv!(
            #[doc = concat!("dV, ", stringify!($t), ", head dim 129 to 256, causal, sm_90a (wgmma).")]
            $dvc,
            $t,
            d = 256,
            causal = 1,
            wgmma,
            threads = 256,
            bq = 32,
            bkv = 128,
            stages = 3,
            only = dv
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 129 to 256, sm_90a (wgmma).")]
            $dq,
            $t,
            d = 256,
            causal = 0,
            wgmma,
            threads = 256,
            bq = 128,
            bkv = 32,
            stages = 3
        );
        attention_backward_dq!(
            #[doc = concat!("dQ, ", stringify!($t), ", head dim 129 to 256, causal, sm_90a (wgmma).")]
            $dqc,
            $t,
            d = 256,
            causal = 1,
            wgmma,
            threads = 256,
            bq = 128,
            bkv = 32,
            stages = 3,
            producers = 128,
            order = dynamic
        );
    };
}

attention_backward_wgmma_d256_kernels!(
    bf16,
    attention_backward_wgmma_dk_bf16_d256,
    attention_backward_wgmma_dk_bf16_d256_causal,
    attention_backward_wgmma_dv_bf16_d256,
    attention_backward_wgmma_dv_bf16_d256_causal,
    attention_backward_wgmma_dq_bf16_d256,
    attention_backward_wgmma_dq_bf16_d256_causal
);
attention_backward_wgmma_d256_kernels!(
    f16,
    attention_backward_wgmma_dk_f16_d256,
    attention_backward_wgmma_dk_f16_d256_causal,
    attention_backward_wgmma_dv_f16_d256,
    attention_backward_wgmma_dv_f16_d256_causal,
    attention_backward_wgmma_dq_f16_d256,
    attention_backward_wgmma_dq_f16_d256_causal
);

/// How a backward pass gets dK and dV.
///
/// ```
/// use tessera::catalog::attention::{self, KeyGradients, TensorCores};
/// let kernels = attention::backward_kernels_for::<half::bf16>(TensorCores::Wgmma, 128, false).unwrap();
/// assert!(matches!(kernels.dkdv, KeyGradients::Together(k) if k.name() == "attention_backward_wgmma_dkdv_bf16_d128"));
/// ```
#[derive(Clone, Copy)]
pub enum KeyGradients {
    /// One kernel writes both (head dims to 128).
    Together(&'static crate::KernelDefinition),
    /// A kernel each (head dim 256 on wgmma, where the two accumulators of a block's keys
    /// would not fit a lane's registers together).
    Apart { dk: &'static crate::KernelDefinition, dv: &'static crate::KernelDefinition },
}

/// The kernels of one backward pass.
#[derive(Clone, Copy)]
pub struct BackwardKernels {
    /// Δ = Σ dO·O per query row.
    pub delta: &'static crate::KernelDefinition,
    /// dK and dV, a block per key tile.
    pub dkdv: KeyGradients,
    /// dQ, a block per query tile.
    pub dq: &'static crate::KernelDefinition,
}

/// The head dims the backward kernels of `cores` are stamped for: 64 and 128 on mma.sync (at
/// 256 a warp's K and V fragments and its gradient would not fit its registers), 256 too on
/// wgmma (whose operands stay in shared memory).
///
/// ```
/// use tessera::catalog::attention::{self, TensorCores};
/// assert_eq!(attention::backward_head_dims(TensorCores::Wgmma), [64, 128, 256]);
/// ```
pub fn backward_head_dims(cores: super::TensorCores) -> &'static [usize] {
    match cores {
        super::TensorCores::MmaSync => super::BACKWARD_HEAD_DIMS,
        super::TensorCores::Wgmma | super::TensorCores::WgmmaTma => super::BACKWARD_WGMMA_HEAD_DIMS,
    }
}

/// The kernels [`backward_on`] launches on `cores` for `head_dim` and `causal`, or why there
/// are none: both Hopper forms take the same wgmma kernels (one set, some of them fed by TMA
/// producers where those measured faster).
///
/// ```
/// use tessera::catalog::attention::{self, KeyGradients, TensorCores};
/// let kernels = attention::backward_kernels_for::<half::bf16>(TensorCores::MmaSync, 128, true).unwrap();
/// assert_eq!(kernels.dq.name(), "attention_backward_dq_bf16_d128_causal");
/// let kernels = attention::backward_kernels_for::<half::bf16>(TensorCores::Wgmma, 256, false).unwrap();
/// assert!(matches!(kernels.dkdv, KeyGradients::Apart { dk, .. } if dk.name() == "attention_backward_wgmma_dk_bf16_d256"));
/// assert!(attention::backward_kernels_for::<half::bf16>(TensorCores::MmaSync, 256, false).is_err());
/// ```
pub fn backward_kernels_for<T: AttentionElement>(
    cores: super::TensorCores,
    head_dim: usize,
    causal: bool,
) -> Result<BackwardKernels, AttentionError> {
    let index = super::width_index(head_dim, backward_head_dims(cores))? + usize::from(causal);
    let (dkdv, dq) = match cores {
        super::TensorCores::MmaSync => (KeyGradients::Together(T::BACKWARD_DKDV[index]), T::BACKWARD_DQ[index]),
        super::TensorCores::Wgmma | super::TensorCores::WgmmaTma => {
            (T::BACKWARD_WGMMA_DKDV[index], T::BACKWARD_WGMMA_DQ[index])
        }
    };
    Ok(BackwardKernels { delta: T::BACKWARD_DELTA, dkdv, dq })
}

/// The gradients of [`super::forward`]: dQ, dK and dV from the forward's inputs, its output
/// `o`, its log-sum-exp `lse` and the gradient of the output `dout` (same shapes as the
/// forward's: q, o, dout, dq (batch, heads, seq_q, head_dim); k, v, dk, dv (batch, kv_heads,
/// seq_kv, head_dim); lse (batch, heads, seq_q) f32). Grouped-query attention sums the
/// gradients of every query head that shares a K/V head into its dK, dV. Shapes are checked
/// before anything runs; three launches (Δ = Σ dO·O into a scratch tensor, dK and dV, dQ; dK
/// and dV apart at head dim 256), none synchronising; returns the last. On Hopper (and the simulation) the gradient kernels
/// are the wgmma ones, elsewhere mma.sync's ([`super::TensorCores::of`]).
///
/// ```ignore
/// attention::forward(&backend, &q, &k, &v, &mut o, &mut lse, true)?;
/// // .. the loss's gradient with respect to o into `dout` ..
/// attention::backward(&backend, &q, &k, &v, &o, &lse, &dout, &mut dq, &mut dk, &mut dv, true)?;
/// ```
#[allow(clippy::too_many_arguments)] // the tensors torch's flash backward takes, each typed
pub fn backward<T: AttentionElement>(
    device: &impl crate::Device,
    q: &impl Input<T>,
    k: &impl Input<T>,
    v: &impl Input<T>,
    o: &impl Input<T>,
    lse: &impl Input<f32>,
    dout: &impl Input<T>,
    dq: &mut impl Output<T>,
    dk: &mut impl Output<T>,
    dv: &mut impl Output<T>,
    causal: bool,
) -> Result<crate::Launched, AttentionError> {
    backward_on(device, super::TensorCores::of(device), q, k, v, o, lse, dout, dq, dk, dv, causal)
}

/// [`backward`] on the kernels of `cores` (to compare them, or to test both on the
/// simulation); wgmma on a GPU other than compute capability 9.0 is a typed error from the
/// launch.
#[allow(clippy::too_many_arguments)]
pub fn backward_on<T: AttentionElement>(
    device: &impl crate::Device,
    cores: super::TensorCores,
    q: &impl Input<T>,
    k: &impl Input<T>,
    v: &impl Input<T>,
    o: &impl Input<T>,
    lse: &impl Input<f32>,
    dout: &impl Input<T>,
    dq: &mut impl Output<T>,
    dk: &mut impl Output<T>,
    dv: &mut impl Output<T>,
    causal: bool,
) -> Result<crate::Launched, AttentionError> {
    let shapes = super::Shapes::of(q, k, v)?;
    shapes.expect("o", o.shape(), &shapes.q)?;
    shapes.expect("lse", lse.shape(), &shapes.lse())?;
    shapes.expect("dout", dout.shape(), &shapes.q)?;
    shapes.expect("dq", dq.shape(), &shapes.q)?;
    shapes.expect("dk", dk.shape(), &shapes.kv)?;
    shapes.expect("dv", dv.shape(), &shapes.kv)?;
    let kernels = backward_kernels_for::<T>(cores, shapes.head_dim(), causal)?;
    let mut delta = device.device_ref().zeros::<f32>(shapes.lse())?;
    kernels.delta.launch(
        device,
        &mut [
            crate::Argument::input("o", o),
            crate::Argument::input("dout", dout),
            crate::Argument::output("delta", &mut delta),
        ],
    )?;
    let scale = 1.0 / (shapes.head_dim() as f32).sqrt();
    let scale_log2 = std::f32::consts::LOG2_E * scale;
    // what both gradient kernels read, in their parameter order; then each one's outputs
    let inputs = || {
        vec![
            crate::Argument::input("q", q),
            crate::Argument::input("k", k),
            crate::Argument::input("v", v),
            crate::Argument::input("dout", dout),
            crate::Argument::input("lse", lse),
            crate::Argument::input("delta", &delta),
        ]
    };
    let scalars = || [crate::Argument::scalar("scale_log2", scale_log2), crate::Argument::scalar("scale", scale)];
    match kernels.dkdv {
        KeyGradients::Together(kernel) => {
            let mut arguments = inputs();
            arguments.extend([crate::Argument::output("dk", dk), crate::Argument::output("dv", dv)]);
            arguments.extend(scalars());
            kernel.launch(device, &mut arguments)?;
        }
        KeyGradients::Apart { dk: dk_kernel, dv: dv_kernel } => {
            let mut arguments = inputs();
            arguments.push(crate::Argument::output("dk", dk));
            arguments.extend(scalars());
            dk_kernel.launch(device, &mut arguments)?;
            // dV's kernel reads neither V nor Δ
            let mut arguments: Vec<_> =
                inputs().into_iter().filter(|argument| !["v", "delta"].contains(&argument.param())).collect();
            arguments.push(crate::Argument::output("dv", dv));
            arguments.extend(scalars());
            dv_kernel.launch(device, &mut arguments)?;
        }
    }
    let mut arguments = inputs();
    arguments.push(crate::Argument::output("dq", dq));
    arguments.extend(scalars());
    Ok(kernels.dq.launch(device, &mut arguments)?)
}
