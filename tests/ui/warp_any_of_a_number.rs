use tessera::prelude::*;

// warp_any takes a bool: the one error is the call's, not a second one where its result is used
#[tile_kernel(threads = 64, vector = 1)]
pub fn any_positive(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let v = x[[row, thread_index()]];
    let any = warp_any(v);
    if any {
        y[row] = 1.0;
    }
}

fn main() {}
