use tessera::prelude::*;

#[tile_kernel(threads = 0, vector = 4, consts(TILE = 1024))]
pub fn no_threads(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
