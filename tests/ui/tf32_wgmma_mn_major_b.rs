// TF32 wgmma reads both operands K-major (the PTX ISA transposes only 16-bit ones): a B tile
// stored [BK, BN], N along its rows, must come as Bᵀ, stored [BN, BK] and multiplied `.t()`.
use tessera::prelude::*;

#[tile_kernel(threads = 256, vector = 4, target = sm_90a, precision = tf32, consts(BM = 128, BN = 128, BK = 32))]
pub fn b_stored_k_by_n(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, 128]);
    for k in pipeline(0..cdiv(K, BK), stages = 4) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
