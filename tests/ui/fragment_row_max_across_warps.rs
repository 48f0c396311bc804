use tessera::prelude::*;

// A row softmax of S = A·B, but each warp holds 32 of the tile's 64 columns: a row of S is
// split between two warps, which `row_max` (shuffles within one warp) cannot reach.
#[tile_kernel(threads = 256, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 32))]
pub fn row_softmax(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, y: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
    }
    for i in 0..WM / 8 {
        let peak = s.row_max(i);
        for j in 0..WN / 4 {
            s[[i, j]] = exp2(s[[i, j]] - peak);
        }
    }
    copy(&s, y.tile([by, bx], [BM, BN]));
}

fn main() {}
