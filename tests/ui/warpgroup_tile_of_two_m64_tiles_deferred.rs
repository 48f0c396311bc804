// `.deferred()` issues one m64 tile's product behind the next k-tile's; a warpgroup of two m64
// tiles would need both tiles' products in flight behind it.
use tessera::prelude::*;

#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 128, BN = 128, BK = 64))]
pub fn two_tiles_deferred(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([128, 128]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc).deferred();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
