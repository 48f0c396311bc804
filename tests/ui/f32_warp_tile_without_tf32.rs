use tessera::prelude::*;

/// f32 operands on a warp-tile fragment: the tensor cores have no f32 multiplier.
#[tile_kernel(threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
pub fn f32_on_tensor_cores(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
