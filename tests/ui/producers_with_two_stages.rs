use tessera::prelude::*;

// producers fill a cp.async ring (3 or more stages), and only thread code and the fragments'
// copies out may follow their pipeline (no barrier: the producers never come to it)
#[tile_kernel(threads = 256, vector = 4, target = sm_90, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8))]
pub fn producers_with_two_stages(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]);
    for k in pipeline(0..cdiv(K, BK), stages = 2, producers = 128) {
        copy(a.tile([by, k], [BM, BK]), &a_s.t());
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
    }
    sync();
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
