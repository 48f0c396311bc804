// `.unroll(n)` on a wgmma whose lanes load A from shared memory: commit groups of n k-steps,
// which must divide the k-tile's steps (BK = 32 is four k-steps of 8 on TF32).
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, consts(BM = 256, BN = 128, BK = 32))]
pub fn tf32_groups_that_do_not_divide_the_k_steps(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([64, 256]);
    for k in pipeline(0..cdiv(K, BK), stages = 4) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t).unroll(3);
    }
    copy(&acc_t.t(), c.tile([by, bx], [BM, BN]));
}

fn main() {}
