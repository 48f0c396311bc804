// `.by_tma()` stages one m64 tile a warpgroup through shared memory (each warp its 16 rows); a
// warpgroup holding two m64 tiles (`.warpgroup_tile([128, 128])`, V21's ping-pong) has twice the
// rows its staging buffers take.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 256, BN = 128, BK = 64))]
pub fn two_tiles_by_tma(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<bf16, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([128, 128]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).by_tma();
}

fn main() {}
