use tessera::prelude::*;

// a local computed from warp_index() differs between warps as warp_index() does: block_sum
// under a condition on it would leave the warps that skip it waiting at __syncthreads
#[tile_kernel(threads = 256, vector = 1)]
pub fn row_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        s += x[[row, c]];
    }
    let warp = warp_index();
    if warp < 4 {
        let total = block_sum(s);
        if thread_index() == 0 {
            y[row] = total;
        }
    }
}

fn main() {}
