// `.zigzag()` and `.dynamic()` both order the tiles persistent blocks take: one at a time.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
pub fn two_orders(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).zigzag().dynamic();
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(64).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
