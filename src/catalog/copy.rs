//! The vectorized-copy family: y = x with 32-, 64- and 128-bit accesses, one tile per block
//! or grid-stride, for any length (the last, partial tile takes a guarded scalar path).
//!
//! The three widths differ only in `vector` and the tile that keeps one access per thread;
//! the grid-stride forms differ only in how blocks find their tiles.

use crate::prelude::*;

/// Scalar copy: one 32-bit access per thread, one tile per block.
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
pub fn copy_f32(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

/// float2 copy: one 64-bit access per thread, one tile per block.
#[tile_kernel(threads = 256, vector = 2, consts(TILE = 512))]
pub fn copy_f32x2(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

/// float4 copy: one 128-bit access per thread, one tile per block.
#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn copy_f32x4(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

/// Scalar copy over a grid-stride loop: as many blocks as stay resident, each taking
/// every gridDim.x-th tile.
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
pub fn copy_f32_grid_stride(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    for t in grid_stride(cdiv(N, TILE)) {
        copy(x.tile([t], [TILE]), y.tile([t], [TILE]));
    }
}

/// float2 copy over a grid-stride loop.
#[tile_kernel(threads = 256, vector = 2, consts(TILE = 512))]
pub fn copy_f32x2_grid_stride(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    for t in grid_stride(cdiv(N, TILE)) {
        copy(x.tile([t], [TILE]), y.tile([t], [TILE]));
    }
}

/// float4 copy over a grid-stride loop.
#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn copy_f32x4_grid_stride(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    for t in grid_stride(cdiv(N, TILE)) {
        copy(x.tile([t], [TILE]), y.tile([t], [TILE]));
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 6] = [
    &copy_f32::KERNEL,
    &copy_f32x2::KERNEL,
    &copy_f32x4::KERNEL,
    &copy_f32_grid_stride::KERNEL,
    &copy_f32x2_grid_stride::KERNEL,
    &copy_f32x4_grid_stride::KERNEL,
];
