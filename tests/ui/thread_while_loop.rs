use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
pub fn spins(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let mut i = bx * TILE + thread_index();
    while i < N {
        y[i] = x[i];
        i += TILE;
    }
}

fn main() {}
