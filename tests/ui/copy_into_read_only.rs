use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn backwards(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(y.tile([bx], [TILE]), x.tile([bx], [TILE]));
}

fn main() {}
