// With `consumers = 2` each group of compute threads holds the whole fragment: a 128 × 128
// accumulator of 64 × 128 warpgroup tiles needs two warpgroups a group, four in all — the
// message counts them per group, not for the block.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 128, BK = 64))]
pub fn group_too_small(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, 128]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma, consumers = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
