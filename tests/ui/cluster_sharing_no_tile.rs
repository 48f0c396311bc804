// A persistent pipeline's cluster takes neighbouring tiles along one axis and multicasts the
// tiles they share: side by side (`cluster = (2, 1)`) the blocks share A's tile only if A's
// tile does not move along x — here every copy does, so there is nothing to multicast.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, cluster = (2, 1), consts(BM = 128, BN = 256, BK = 64, WN = 256))]
pub fn nothing_shared(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by + bx, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, cluster = (2, 2), consts(BM = 128, BN = 256, BK = 64, WN = 256))]
pub fn two_axes(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(8);
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
