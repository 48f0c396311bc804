use tessera::prelude::*;

// 48 threads are a warp and 16 lanes: the shuffles of the second warp would read lanes that
// do not exist
#[tile_kernel(threads = 48, vector = 1)]
pub fn row_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        s += x[[row, c]];
    }
    let total = block_sum(s);
    if thread_index() == 0 {
        y[row] = total;
    }
}

fn main() {}
