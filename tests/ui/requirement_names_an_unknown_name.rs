use tessera::prelude::*;

/// A requirement on the shape (N, a shape symbol, is checked at launch) that also names M,
/// which is neither a constant nor a shape symbol.
#[tile_kernel(threads = 256, vector = 1, consts(TR = 64), require(N <= M * TR))]
pub fn bounded_rows(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TR));
    let i = bx * TR + thread_index();
    if thread_index() < TR && i < N {
        y[i] = x[i];
    }
}

fn main() {}
