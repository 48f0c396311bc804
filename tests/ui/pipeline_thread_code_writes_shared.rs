use tessera::prelude::*;

#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn pipeline_thread_code_writes_shared(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BK, BM]).pad(4);
    let b_s = shared::<f32>([BK, BN]);
    let sums = shared::<f32>([1, 64]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3) {
        copy(a.tile([by, k], [BM, BK]).t(), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s.t(), &b_s, &mut acc);
        sums[[0, thread_index() as i32]] = acc[[0, 0]];
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
