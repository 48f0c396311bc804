// `copy(&acc_t.t(), ..)` stores Cᵀ's fragment transposed: the tile it goes to is the fragment's
// shape the other way round, 256 × 128 here, not 128 × 256.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, consts(BM = 256, BN = 128, BK = 32))]
pub fn transposed_store_of_the_wrong_shape(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([64, 256]);
    for k in pipeline(0..cdiv(K, BK), stages = 4) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t);
    }
    copy(&acc_t.t(), c.tile([bx, by], [BN, BM]));
}

fn main() {}
