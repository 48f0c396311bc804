use tessera::prelude::*;

#[tile_kernel(threads = (32, 8), consts(T = 32, H = 16))]
pub fn half_a_buffer(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, H]);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

fn main() {}
