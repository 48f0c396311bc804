use tessera::prelude::*;

// an element map's parameters do not hide the kernel's names, its value is of the
// fragment's type, and it maps each value on its own (no warp collectives)
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn hidden(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, bias: Global<f32, (N,)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, bias, N| v);
}

#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn typed(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, bias: Global<f32, (N,)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, row, col| row + col);
}

#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn collective(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v, _, _| v - warp_max(v));
}

fn main() {}
