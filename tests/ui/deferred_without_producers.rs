// `.deferred()` leaves a wgmma product to the next k-tile; without producers the compute
// threads' own cp.async ring would refill the stage it reads while it still runs.
use tessera::prelude::*;

#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BM = 64, BN = 128, BK = 64, WN = 128))]
pub fn two_products(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>, d: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    let mut twice = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
        mma(&a_s, &b_s, &mut twice).deferred();
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&twice, d.tile([by, bx], [BM, BN]));
}

fn main() {}
