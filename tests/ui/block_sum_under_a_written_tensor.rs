use tessera::prelude::*;

// an element of a tensor the kernel writes may hold another thread's write or not yet: a
// condition on it can differ between threads, so a block_sum under it may be skipped by some
#[tile_kernel(threads = 128, vector = 1)]
pub fn flagged_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, C)>) {
    let (row,) = grid(R);
    let v = x[[row, thread_index()]];
    if thread_index() == 100 {
        y[[row, 0]] = 1.0;
    }
    if y[[row, 0]] > 0.0 {
        let total = block_sum(v);
        y[[row, 1]] = total;
    }
}

fn main() {}
