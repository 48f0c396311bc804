use tessera::prelude::*;

// block_sum waits at __syncthreads: warps that skip it would leave the others waiting
#[tile_kernel(threads = 256, vector = 1)]
pub fn row_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        s += x[[row, c]];
    }
    if warp_index() < 4 {
        let total = block_sum(s);
        if thread_index() == 0 {
            y[row] = total;
        }
    }
}

fn main() {}
