use tessera::prelude::*;

#[tile_kernel(threads = (8, 8), vector = 4, consts(R = 32, C = 30))]
pub fn thirty_columns(x: Global<f32, (H, W)>, y: GlobalMut<f32, (H, W)>) {
    let (bx, by) = grid(cdiv(W, C), cdiv(H, R));
    let t = shared::<f32>([R, C]);
    copy(x.tile([by, bx], [R, C]), &t);
    copy(&t, y.tile([by, bx], [R, C]));
}

fn main() {}
