use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
pub fn lengths(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let n = x.len();
    y[bx] = n as f32;
}

fn main() {}
