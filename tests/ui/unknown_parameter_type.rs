use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn host_vector(x: Vec<f32>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() {}
