//! Reductions written as thread code: the sum of an f32 vector and the dot product of two.
//!
//! Each is two passes, so the result never depends on the order threads run in (the
//! simulator checks that under three orders; float atomics would make it depend on it):
//!
//! 1. `*_partials`: `P` blocks (the length of `partials`, e.g. 1024), each thread a
//!    grid-stride loop over 128-bit vector loads (`x.vector(i)`, `VECTOR` elements), `UNROLL`
//!    of them issued together each trip, then the scalar tail; a warp shuffle tree (`warp_sum`) per warp, the warps' sums through
//!    shared memory, and warp 0 adds those up: one partial per block.
//! 2. `sum_finish`: one block adds the `P` partials the same way into `total[0]`.
//!
//! [`sum_f32`] and [`dot_f32`] run both passes from Rust.

use crate::prelude::*;
use crate::{Backend, Device, Input};

/// Partials per first pass: enough blocks to fill an H200 (132 SMs × 8 blocks of 256 threads).
pub const PARTIALS: usize = 1024;

/// Pass 1 of the sum: block b adds up its grid-stride share of `x` into `partials[b]`. A
/// thread's trip is `UNROLL` vectors one grid-stride apart, loaded (indices clamped into x)
/// before any is added, so they are all in flight at once; only the additions are guarded.
#[tile_kernel(threads = 256, vector = 4, consts(WARPS = 8, UNROLL = 4), require(WARPS * 32 == THREADS))]
pub fn sum_partials_f32(x: Global<f32, (N,)>, partials: GlobalMut<f32, (P,)>) {
    let (bx,) = grid(P);
    let warp_sums = shared::<f32>([1, WARPS]);
    let first = bx * THREADS + thread_index();
    let stride = P * THREADS;
    let vectors = N / VECTOR;
    let mut s = [0.0f32; UNROLL];
    for i0 in (first..vectors).step_by(stride * UNROLL) {
        let mut w = [0.0f32; UNROLL];
        for u in 0..UNROLL {
            w[u] = x.vector(min(i0 + u * stride, vectors - 1)).sum();
        }
        for u in 0..UNROLL {
            if i0 + u * stride < vectors {
                s[u] += w[u];
            }
        }
    }
    for i in (vectors * VECTOR + first..N).step_by(stride) {
        s[0] += x[i];
    }
    let mut total = 0.0f32;
    for u in 0..UNROLL {
        total += s[u];
    }
    let warp_total = warp_sum(total);
    if lane() == 0 {
        warp_sums[[0, warp_index()]] = warp_total;
    }
    if warp_index() == 0 {
        let mut t = 0.0f32;
        if lane() < WARPS {
            t = warp_sums[[0, lane()]];
        }
        let block_total = warp_sum(t);
        if lane() == 0 {
            partials[bx] = block_total;
        }
    }
}

/// Pass 1 of the dot product: block b adds up its share of x · y into `partials[b]`, with
/// the loads of a trip in flight together as in [`sum_partials_f32`].
#[tile_kernel(threads = 256, vector = 4, consts(WARPS = 8, UNROLL = 4), require(WARPS * 32 == THREADS))]
pub fn dot_partials_f32(x: Global<f32, (N,)>, y: Global<f32, (N,)>, partials: GlobalMut<f32, (P,)>) {
    let (bx,) = grid(P);
    let warp_sums = shared::<f32>([1, WARPS]);
    let first = bx * THREADS + thread_index();
    let stride = P * THREADS;
    let vectors = N / VECTOR;
    let mut s = [0.0f32; UNROLL];
    for i0 in (first..vectors).step_by(stride * UNROLL) {
        let mut w = [0.0f32; UNROLL];
        for u in 0..UNROLL {
            let i = min(i0 + u * stride, vectors - 1);
            w[u] = x.vector(i).dot(y.vector(i));
        }
        for u in 0..UNROLL {
            if i0 + u * stride < vectors {
                s[u] += w[u];
            }
        }
    }
    for i in (vectors * VECTOR + first..N).step_by(stride) {
        s[0] += x[i] * y[i];
    }
    let mut total = 0.0f32;
    for u in 0..UNROLL {
        total += s[u];
    }
    let warp_total = warp_sum(total);
    if lane() == 0 {
        warp_sums[[0, warp_index()]] = warp_total;
    }
    if warp_index() == 0 {
        let mut t = 0.0f32;
        if lane() < WARPS {
            t = warp_sums[[0, lane()]];
        }
        let block_total = warp_sum(t);
        if lane() == 0 {
            partials[bx] = block_total;
        }
    }
}

/// Pass 2: one block adds the partials up, in a fixed order, into `total[0]`.
#[tile_kernel(threads = 1024, vector = 1, consts(WARPS = 32), require(WARPS * 32 == THREADS))]
pub fn sum_finish_f32(partials: Global<f32, (P,)>, total: GlobalMut<f32, (ONE,)>) {
    let (bx,) = grid(ONE);
    let warp_sums = shared::<f32>([1, WARPS]);
    let mut s = 0.0f32;
    for i in (thread_index()..P).step_by(THREADS) {
        s += partials[i];
    }
    let warp_total = warp_sum(s);
    if lane() == 0 {
        warp_sums[[0, warp_index()]] = warp_total;
    }
    if warp_index() == 0 {
        let block_total = warp_sum(warp_sums[[0, lane()]]);
        if lane() == 0 && bx == 0 {
            total[0] = block_total;
        }
    }
}

/// Σ x on `device`, in two passes ([`sum_partials_f32`], then [`sum_finish_f32`] launched as
/// its dependent: on sm_90 its launch overlaps the first pass's last blocks).
///
/// ```ignore
/// let x = backend.upload(&host, [n])?;
/// let total = tessera::catalog::reduce::sum_f32(&backend, &x)?;
/// ```
pub fn sum_f32(device: &Backend, x: &impl Input<f32>) -> Result<f32, Error> {
    // both buffers before pass 1, neither zeroed: each is written before it is read, and an
    // allocation or a memset between the launches would stand between pass 2 and its
    // dependent launch
    let (mut partials, total) = buffers(device)?;
    sum_partials_f32::launch(device, x, &mut partials)?;
    finish(device, &partials, total)
}

/// x · y on `device`, in two passes ([`dot_partials_f32`], then [`sum_finish_f32`] launched as
/// its dependent).
pub fn dot_f32(device: &Backend, x: &impl Input<f32>, y: &impl Input<f32>) -> Result<f32, Error> {
    let (mut partials, total) = buffers(device)?;
    dot_partials_f32::launch(device, x, y, &mut partials)?;
    finish(device, &partials, total)
}

/// The partials and the total of a two-pass reduction, not zeroed.
fn buffers(device: &Backend) -> Result<(crate::DeviceTensor<f32>, crate::DeviceTensor<f32>), Error> {
    let on = device.device_ref();
    Ok((on.scratch::<f32>([PARTIALS])?, on.scratch::<f32>([1])?))
}

fn finish(device: &Backend, partials: &impl Input<f32>, mut total: crate::DeviceTensor<f32>) -> Result<f32, Error> {
    sum_finish_f32::launch_dependent(device, partials, &mut total)?;
    Ok(device.download(&total)?[0])
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 3] =
    [&sum_partials_f32::KERNEL, &dot_partials_f32::KERNEL, &sum_finish_f32::KERNEL];
