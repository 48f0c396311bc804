use tessera::prelude::*;

/// TR = 60 breaks the 32-byte alignment of the runs the body stores.
#[tile_kernel(threads = 256, vector = 1, consts(TR = 60), require(TR % 8 == 0, TR >= 8))]
pub fn aligned_runs(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TR));
    let i = bx * TR + thread_index();
    if thread_index() < TR && i < N {
        y[i] = x[i];
    }
}

fn main() {}
