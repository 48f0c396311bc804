use tessera::prelude::*;

// `.map` takes a closure of the value, its row and its column, comes before `.axpby`, and
// applies to a fragment's epilogue only
#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn arity(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).map(|v| v * 2.0);
}

#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, BK = 8, TM = 4, TN = 4))]
pub fn order(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>, alpha: f32, beta: f32) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]);
    let b_s = shared::<f32>([BK, BN]);
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    for k in pipeline(0..cdiv(K, BK), stages = 1) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN])).axpby(alpha, beta).map(|v, _, _| v);
}

#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn not_an_epilogue(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE])).map(|v, _, _| v);
}

fn main() {}
