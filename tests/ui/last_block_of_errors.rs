use tessera::prelude::*;

// last_block_of counts blocks by an integer group: a float is no group
#[tile_kernel(threads = 256, vector = 1)]
pub fn float_group(x: Global<f32, (N,)>, partials: GlobalMut<f32, (S,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(S);
    if thread_index() == 0 {
        partials[bx] = x[bx];
    }
    if last_block_of(1.5, S) {
        y[0] = partials[0];
    }
}

// last_block_of waits at __syncthreads: a block whose warps skip it would never finish
#[tile_kernel(threads = 256, vector = 1)]
pub fn under_a_warp_condition(x: Global<f32, (N,)>, partials: GlobalMut<f32, (S,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(S);
    if warp_index() == 0 {
        if last_block_of(0, S) {
            y[0] = partials[0] + x[0];
        }
    }
}

fn main() {}
