// `consumers = 2` splits the compute threads into groups that take tiles in turn from a ring
// the producers fill; without producers there is no such ring.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 64, BN = 256, BK = 64))]
pub fn no_producers(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, 256]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, consumers = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
