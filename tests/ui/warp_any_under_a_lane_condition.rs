use tessera::prelude::*;

// a vote under a condition on the lanes: the lanes that skip it leave it waiting
#[tile_kernel(threads = 64, vector = 1)]
pub fn any_positive(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let v = x[[row, thread_index()]];
    if lane() < 16 {
        if warp_any(v > 0.0) {
            y[row] = 1.0;
        }
    }
}

fn main() {}
