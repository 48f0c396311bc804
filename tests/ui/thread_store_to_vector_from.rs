use tessera::prelude::*;

// `vector_from` reads a vector at any element; a store there has no aligned access to become
#[tile_kernel(threads = 64, vector = 4)]
pub fn shift_right(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (_b,) = grid(1);
    let c = thread_index() * VECTOR + 1;
    if c + VECTOR <= N {
        y.vector_from(c) = x.vector_from(c - 1);
    }
}

fn main() {}
