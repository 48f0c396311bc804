// `.dynamic()` hands tiles to persistent blocks as they finish one; a plain grid gives each
// block its own tile, so there is nothing to hand out.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
pub fn plain_grid(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).dynamic();
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(64);
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
