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

fn main() {}
