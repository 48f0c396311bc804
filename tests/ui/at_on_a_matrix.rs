use tessera::prelude::*;

// a 2-D tensor is one matrix: there is no batch to select
#[tile_kernel(threads = (32, 8), consts(T = 32))]
pub fn transpose(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]).pad(1);
    copy(x.at([0]).tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

fn main() {}
