use tessera::prelude::*;

// 16-bit floats compute like CUDA's __half / __nv_bfloat16, but a reduction rounded to 16 bits
// at every step, a 16-bit remainder and a 16-bit atomic are refused with the f32 way out
#[tile_kernel(threads = 256, vector = 1, consts(TILE = 256))]
pub fn halves(x: Global<bf16, (N,)>, y: GlobalMut<bf16, (N,)>, total: GlobalMut<bf16, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let v = x[min(i, N - 1)];
    let s = warp_sum(v);
    if i < N {
        y[i] = v % v;
        atomic_add(&total[0], v);
    }
}

fn main() {}
