use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 1, consts(TR = 64), require(TR % 8))]
pub fn no_comparison(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TR));
    copy(x.tile([bx], [TR]), y.tile([bx], [TR]));
}

fn main() {}
