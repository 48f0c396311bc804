use tessera::prelude::*;

// warp w runs the loop w times: the warps that leave it early leave the others' block_sum
// waiting at __syncthreads
#[tile_kernel(threads = 128, vector = 1)]
pub fn repeated_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let v = x[[row, thread_index()]];
    let mut t = 0.0f32;
    for j in 0..warp_index() {
        t += block_sum(v);
    }
    if thread_index() == 0 {
        y[row] = t;
    }
}

fn main() {}
