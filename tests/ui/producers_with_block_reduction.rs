use tessera::prelude::*;

// the compute threads of a kernel with producers may run thread code, but not a block
// reduction: it waits at a barrier for every thread of the block, producers included; nor may
// a tile's own copies (before the pipeline) go with consumer groups that take tiles in turn
#[tile_kernel(threads = 512, vector = 8, target = sm_90a, consts(BM = 128, BN = 256, BK = 64, WN = 256))]
pub fn producers_with_block_reduction(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>, total: GlobalMut<f32, (M,)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let first_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    copy(a.tile([by, 0], [BM, BK]), &first_s);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma, consumers = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    let sum = block_sum(acc[[0, 0]]);
    if thread_index() == 0 {
        total[[by]] = sum;
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn main() {}
