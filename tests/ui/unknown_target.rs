use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, target = sm_75, consts(TILE = 1024))]
pub fn turing(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
