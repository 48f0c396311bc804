use tessera::prelude::*;

// Each lane holds 2 × 16 values of a 16 × 64 warp tile (WM / 8 rows, WN / 4 columns): row
// slot 2 and column slot 16 do not exist; and `row_sum` under a lane-dependent `if` leaves
// the lanes that skip it waiting at the shuffle.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 64, BN = 64, BK = 32, WM = 16, WN = 64))]
pub fn row_sums(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, y: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]);
    let b_s = shared::<bf16>([BK, BN]);
    let mut s = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut s);
    }
    s[[2, 0]] = 0.0;
    let last = s.col(16);
    if s.row(0) < M {
        s[[0, 0]] = s.row_sum(0);
    }
    copy(&s, y.tile([by, bx], [BM, BN]));
}

fn main() {}
