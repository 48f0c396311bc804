use tessera::prelude::*;

// an element of a register array set under a condition on the lanes differs between them: a
// warp_sum under a condition on it leaves the lanes that skip it waiting
#[tile_kernel(threads = 128, vector = 1)]
pub fn marked_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let v = x[[row, thread_index()]];
    let mut marks = [0.0f32; 4];
    if lane() < 3 {
        marks[0] = 1.0;
    }
    if marks[0] > 0.0 {
        let total = warp_sum(v);
        y[row] = total;
    }
}

fn main() {}
