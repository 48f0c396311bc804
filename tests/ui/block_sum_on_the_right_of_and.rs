use tessera::prelude::*;

// `&&` runs its right side only where its left side holds: a block_sum there is skipped by the
// threads where `thread_index() < 5` fails, and the others wait for them at __syncthreads
#[tile_kernel(threads = 128, vector = 1)]
pub fn positive_rows(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        s += x[[row, c]];
    }
    let positive = thread_index() < 5 && block_sum(s) > 0.0;
    if positive {
        y[row] = 1.0;
    }
}

fn main() {}
