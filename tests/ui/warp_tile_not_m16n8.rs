use tessera::prelude::*;

/// A 24-row warp tile: mma.sync multiplies 16-row tiles.
#[tile_kernel(threads = 256, vector = 8, consts(BM = 96, BN = 128, BK = 64, WM = 24, WN = 32))]
pub fn warp_tile_24(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
