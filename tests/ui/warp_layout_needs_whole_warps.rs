use tessera::prelude::*;

/// 48 threads are a warp and a half: `.warp_layout(..)` places whole warps.
#[tile_kernel(threads = 48, consts(BM = 6, BN = 8))]
pub fn half_a_warp_more(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([1, 1]).warp_layout([2, 16]);
    for k in pipeline(0..K, stages = 1) {
        mma(a.tile([by, k], [BM, 1]), b.tile([k, bx], [1, BN]), &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
