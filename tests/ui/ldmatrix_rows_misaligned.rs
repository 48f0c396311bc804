use tessera::prelude::*;

/// A's shared rows padded by 4 halves (8 bytes): every other row starts off the 16-byte
/// boundary ldmatrix reads.
#[tile_kernel(threads = 256, vector = 8, consts(BM = 128, BN = 128, BK = 32, WM = 64, WN = 32))]
pub fn padded_by_four(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).pad(4);
    let b_s = shared::<bf16>([BK, BN]).pad(8);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
