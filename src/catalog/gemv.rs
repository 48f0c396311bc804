//! Matrix–vector products, memory-bound: every element of A is read once, coalesced.
//!
//! - [`gemv_f32`], y = A·x: a warp per row (8 rows per block); each lane keeps `UNROLL`
//!   independent partial sums (`UNROLL` loads in flight), then `warp_sum` adds the lanes up.
//! - [`gemv_t_f32`], y = Aᵀ·x: a block per 32 columns, lane l on column l; the block's 16
//!   warps take interleaved runs of `UNROLL` rows, and warp 0 adds their 16 partial sums from
//!   shared memory — in a fixed order, so the result does not depend on timing.

use crate::prelude::*;
use crate::{Input, Output};

/// y = A·x for A of M × K: a warp per row.
#[tile_kernel(threads = 256, vector = 1, consts(WARP_ROWS = 8, UNROLL = 8))]
pub fn gemv_f32(a: Global<f32, (M, K)>, x: Global<f32, (K,)>, y: GlobalMut<f32, (M,)>) {
    let (bx,) = grid(cdiv(M, WARP_ROWS));
    let row = bx * WARP_ROWS + warp_index();
    if row < M {
        let mut s = [0.0f32; UNROLL];
        for k0 in (0..K).step_by(32 * UNROLL) {
            for u in 0..UNROLL {
                let k = k0 + u * 32 + lane();
                if k < K {
                    s[u] += a[[row, k]] * x[k];
                }
            }
        }
        let mut total = 0.0f32;
        for u in 0..UNROLL {
            total += s[u];
        }
        let row_total = warp_sum(total);
        if lane() == 0 {
            y[row] = row_total;
        }
    }
}

/// y = Aᵀ·x for A of M × N: a block per 32 columns.
#[tile_kernel(threads = 512, vector = 1, consts(WARPS = 16, UNROLL = 16))]
pub fn gemv_t_f32(a: Global<f32, (M, N)>, x: Global<f32, (M,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, 32));
    let partial = shared::<f32>([WARPS, 32]);
    let col = bx * 32 + lane();
    let mut s = [0.0f32; UNROLL];
    if col < N {
        for r0 in (warp_index() * UNROLL..M).step_by(WARPS * UNROLL) {
            for u in 0..UNROLL {
                let r = r0 + u;
                if r < M {
                    s[u] += a[[r, col]] * x[r];
                }
            }
        }
    }
    let mut total = 0.0f32;
    for u in 0..UNROLL {
        total += s[u];
    }
    partial[[warp_index(), lane()]] = total;
    if warp_index() == 0 {
        let mut t = 0.0f32;
        for w in 0..WARPS {
            t += partial[[w, lane()]];
        }
        if col < N {
            y[col] = t;
        }
    }
}

/// y = A·x ([`gemv_f32`]).
///
/// ```ignore
/// tessera::catalog::gemv::gemv(&backend, &a, &x, &mut y)?;   // a: [m, k], x: [k], y: [m]
/// ```
pub fn gemv(
    device: &impl crate::Device,
    a: &impl Input<f32>,
    x: &impl Input<f32>,
    y: &mut impl Output<f32>,
) -> Result<crate::Launched, Error> {
    gemv_f32::launch(device, a, x, y)
}

/// y = Aᵀ·x ([`gemv_t_f32`]), without transposing A.
pub fn gemv_t(
    device: &impl crate::Device,
    a: &impl Input<f32>,
    x: &impl Input<f32>,
    y: &mut impl Output<f32>,
) -> Result<crate::Launched, Error> {
    gemv_t_f32::launch(device, a, x, y)
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 2] = [&gemv_f32::KERNEL, &gemv_t_f32::KERNEL];
