use tessera::prelude::*;

#[tile_kernel(threads = 256, consts(TILE = 256))]
pub fn strides(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    if i < N {
        y[i] = x[i] * (x.leading_dimension() as f32);
    }
}

fn main() {}
