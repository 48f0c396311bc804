use tessera::prelude::*;

#[tile_kernel(threads = 2048, vector = 4, consts(TILE = 8192))]
pub fn too_many_threads(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
