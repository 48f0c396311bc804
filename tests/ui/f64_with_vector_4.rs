use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn wide_doubles(x: Global<f64, (N,)>, y: GlobalMut<f64, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
