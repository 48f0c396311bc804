use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn bytes(x: Global<u8, (N,)>, y: GlobalMut<u8, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
