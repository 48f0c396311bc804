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
        // Load and compute unguarded (the last tile re-reads x[N - 1]) and guard only the
        // store: the loop body is then straight-line code, so all TILE / THREADS loads issue
        // before the first tanh. With the whole body under `if i < N` each load waited for
        // the previous element's store, and the map ran at 72% of the device copy.
        let v = x[min(i, N - 1)];
        let gelu = 0.5 * v * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
        if i < N {
            y[i] = gelu;
        }
    }
}

/// Every kernel of the family, for tests, examples and benchmarks.
pub const ALL: [&crate::KernelDefinition; 2] = [&saxpy::KERNEL, &gelu_tanh::KERNEL];
