use tessera::prelude::*;

// thread code around a pipeline with producers runs with no barrier (the producers never come
// to one): it may not write shared memory
#[tile_kernel(threads = 256, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
pub fn producers_thread_code_writes_shared(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let note_s = shared::<f32>([1, 32]);
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    note_s[[0, lane()]] = acc[[0, 0]];
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
