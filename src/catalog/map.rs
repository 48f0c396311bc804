//! Element-wise maps written as Rust expressions: each block takes a tile of `TILE`
//! elements, each thread every `THREADS`-th one of it (consecutive threads, consecutive
//! elements: coalesced), the last tile guarded element by element.

use crate::prelude::*;

/// y = a·x + y ("saxpy").
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 1024))]
pub fn saxpy(a: f32, x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    for k in 0..TILE / THREADS {
        let i = bx * TILE + k * THREADS + thread_index();
        if i < N {
            y[i] = a * x[i] + y[i];
        }
    }
}

/// y = GELU(x), the tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 1024))]
pub fn gelu_tanh(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    for k in 0..TILE / THREADS {
        let i = bx * TILE + k * THREADS + thread_index();
        if i < N {
            let v = x[i];
            let inner = 0.7978845608 * (v + 0.044715 * v * v * v);
            y[i] = 0.5 * v * (1.0 + tanh(inner));
        }
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 2] = [&saxpy::KERNEL, &gelu_tanh::KERNEL];
