use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, precision = fp8)]
pub fn copy_f32(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, 1024));
    copy(x.tile([bx], [1024]), y.tile([bx], [1024]));
}

fn main() {}
