use tessera::prelude::*;

// a register array's length is a constant, its literal indices lie inside it, and only a
// `let mut` array is written
#[tile_kernel(threads = 256, vector = 1, consts(ITEMS = 4, TILE = 256))]
pub fn arrays(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let mut runtime_length = [0.0f32; N];
    let mut too_long = [0.0f32; ITEMS * 64];
    let fixed = [0.0f32; ITEMS];
    fixed[0] = 1.0;
    if i < N {
        y[i] = x[i];
        y[i] = fixed[4];
    }
}

fn main() {}
