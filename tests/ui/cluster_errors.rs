use tessera::prelude::*;

// 16 blocks: over the 8 every sm_90 part guarantees
#[tile_kernel(threads = 256, vector = 1, cluster = (4, 4), target = sm_90, consts(TILE = 256))]
pub fn cluster_too_large(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let total = cluster_sum(x[min(i, N - 1)]);
    if i < N {
        y[i] = total;
    }
}

// clusters need sm_90
#[tile_kernel(threads = 256, vector = 1, cluster = 2, consts(TILE = 256))]
pub fn cluster_without_target(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let total = cluster_sum(x[min(i, N - 1)]);
    if i < N {
        y[i] = total;
    }
}

// a cluster reduction in a kernel whose blocks run alone
#[tile_kernel(threads = 256, vector = 1, target = sm_90, consts(TILE = 256))]
pub fn cluster_sum_without_cluster(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let total = cluster_sum(x[min(i, N - 1)]);
    if i < N {
        y[i] = total + cluster_rank() as f32;
    }
}

// a cluster reduction beside producers (whose pipeline synchronises the cluster itself: the
// reductions' exchange splits a cluster barrier around the kernel's start, which would interleave)
#[tile_kernel(threads = 256, vector = 8, target = sm_90a, cluster = (2, 1), consts(BM = 64, BN = 128, BK = 64, WN = 128))]
pub fn cluster_sum_beside_producers(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128, copies = tma, consumers = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
    let tiles = cluster_sum(1.0f32);
    if thread_index() == 0 {
        c[[by * BM, bx * BN]] = tiles;
    }
}

fn main() {}
