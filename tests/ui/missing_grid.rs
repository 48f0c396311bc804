use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn nowhere(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    copy(x.tile([0], [TILE]), y.tile([0], [TILE]));
}

fn main() {}
