use tessera::prelude::*;

#[tile_kernel(threads = 1024, vector = 4, min_blocks = 2, consts(TILE = 4096))]
pub fn two_big_blocks(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
