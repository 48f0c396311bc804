use tessera::prelude::*;

// a butterfly reduces groups of 2, 4, 8, 16 or 32 lanes: 12 lanes are not a group it keeps apart
#[tile_kernel(threads = 256, vector = 1)]
pub fn short_row_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (bx,) = grid(cdiv(R, 24));
    let row = bx * 24 + thread_index() / 12;
    let s = x[[min(row, R - 1), thread_index() % 12]];
    let total = warp_sum(s, 12);
    if row < R {
        y[row] = total;
    }
}

fn main() {}
