use tessera::prelude::*;

/// A 256×256 tile is 256 KiB: more than even sm_90's 227 KiB.
#[tile_kernel(threads = 1024, target = sm_90, consts(T = 256))]
pub fn huge_tile(x: Global<f32, (R, C)>, y: GlobalMut<f32, (C, R)>) {
    let (bx, by) = grid(cdiv(C, T), cdiv(R, T));
    let t = shared::<f32>([T, T]);
    copy(x.tile([by, bx], [T, T]), &t);
    copy(&t.t(), y.tile([bx, by], [T, T]));
}

fn main() {}
