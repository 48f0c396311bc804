//! Thread-block clusters (`cluster = ..`, sm_90): every thread of a cluster gets the cluster's
//! sum and maximum from `cluster_sum` / `cluster_max`, `cluster_rank()` numbers the blocks as
//! CUDA does (x fastest), a grid that is not a whole number of clusters is a typed error, and
//! persistent TMA pipelines in clusters multicast the tiles their blocks share (A side by side,
//! with two consumer groups; Bᵀ's one-panel tile in row slices; each against f64) — on the CPU
//! simulation (three thread and block orders; a cluster's blocks take turns there) and, ignored
//! without one, on a GPU. (HGEMM V18 is checked with the family in `hgemm_numbers`.)

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(
    every_block_of_a_cluster_gets_the_cluster_sum_maximum_and_its_rank,
    a_two_dimensional_cluster_numbers_its_blocks_x_first,
    a_grid_that_is_not_whole_clusters_is_refused,
    blocks_side_by_side_multicast_a_to_two_consumer_groups_each,
);

/// Each thread gives x[i]; every thread writes its cluster's sum and maximum and its block's rank.
#[tile_kernel(threads = 64, vector = 1, cluster = 4, target = sm_90, consts(TILE = 64))]
fn cluster_totals(
    x: Global<f32, (N,)>,
    sums: GlobalMut<f32, (N,)>,
    maxima: GlobalMut<f32, (N,)>,
    ranks: GlobalMut<i32, (N,)>,
) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let mut v = 0.0f32;
    let mut m = -f32::INFINITY;
    if i < N {
        v = x[i];
        m = v;
    }
    let total = cluster_sum(v);
    let largest = cluster_max(m);
    if i < N {
        sums[i] = total;
        maxima[i] = largest;
        ranks[i] = cluster_rank();
    }
}

/// A 2 × 2 cluster over a grid of column tiles × rows: the sum over the cluster's 2 rows of 2 tiles.
#[tile_kernel(threads = 32, vector = 1, cluster = (2, 2), target = sm_90, consts(TILE = 32))]
fn cluster_totals_2d(x: Global<f32, (R, C)>, sums: GlobalMut<f32, (R, C)>, ranks: GlobalMut<i32, (R, C)>) {
    let (bx, row) = grid(cdiv(C, TILE), R);
    let c = bx * TILE + thread_index();
    let mut v = 0.0f32;
    if c < C {
        v = x[[row, c]];
    }
    let total = cluster_sum(v);
    if c < C {
        sums[[row, c]] = total;
        ranks[[row, c]] = cluster_rank();
    }
}

/// V14's two consumer groups (tiles in turn) in clusters of two blocks side by side, which share
/// A's 64 × 64 tile — one 128-byte panel, so each block copies a 32-row slice of it, multicast
/// into both blocks' stages.
#[tile_kernel(threads = 256, vector = 8, target = sm_90a, cluster = (2, 1), consts(BM = 64, BN = 128, BK = 64, WN = 128))]
fn a_shared_side_by_side(a: Global<bf16, (M, K)>, b: Global<bf16, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM)).grouped(4);
    let a_s = shared::<bf16>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<bf16>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc = fragment::<f32>([BM, BN]).warpgroup_tile([64, WN]);
    for k in pipeline(0..cdiv(K, BK), stages = 3, producers = 128, copies = tma, consumers = 2) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&a_s, &b_s, &mut acc);
    }
    copy(&acc, c.tile([by, bx], [BM, BN]));
}

fn blocks_side_by_side_multicast_a_to_two_consumer_groups_each(backend: &Backend) {
    let kernel = a_shared_side_by_side::KERNEL.ir().unwrap();
    assert_eq!(kernel.cluster_tiles(), Some(tessera::dsl::ClusterTiles { axis: 0, blocks: 2 }));
    // three column tiles (the last cluster's second block past N), K a multiple of 8: TMA
    for (m, n, k) in [(130, 3 * 128 - 8, 200), (64, 128, 64), (200, 520, 136)] {
        let host_a: Vec<f32> = (0..m * k).map(|i| ((i * 5 + 1) % 11) as f32 - 5.0).collect();
        let host_b: Vec<f32> = (0..k * n).map(|i| ((i * 3 + 2) % 7) as f32 - 3.0).collect();
        let want = common::gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
        let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let a = backend.upload(&to_bf16(&host_a), [m, k]).unwrap();
        let b = backend.upload(&to_bf16(&host_b), [k, n]).unwrap();
        let mut c = backend.filled([m, n], f32::NAN).unwrap();
        let launched = a_shared_side_by_side::launch(backend, &a, &b, &mut c).unwrap();
        assert!(launched.tma, "{m} × {n} × {k}: copied by TMA");
        // small integers: every sum is exact in f32
        let got = backend.download(&c).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(f64::from(*g), *w, "{m} × {n} × {k}: C[{}, {}]", i / n, i % n);
        }
    }
}

/// Small integers: every order of adding them gives the same f32, so sums compare exactly.
fn integers(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + 3) % 13) as f32 - 6.0).collect()
}

fn every_block_of_a_cluster_gets_the_cluster_sum_maximum_and_its_rank(backend: &Backend) {
    // 12 blocks (3 clusters), the last block partly past the end
    let n = 12 * 64 - 17;
    let host = integers(n);
    let x = backend.upload(&host, [n]).unwrap();
    let (mut sums, mut maxima) = (backend.zeros::<f32>([n]).unwrap(), backend.zeros::<f32>([n]).unwrap());
    let mut ranks = backend.filled([n], -1i32).unwrap();
    cluster_totals::launch(backend, &x, &mut sums, &mut maxima, &mut ranks).unwrap();
    let (sums, maxima, ranks) =
        (backend.download(&sums).unwrap(), backend.download(&maxima).unwrap(), backend.download(&ranks).unwrap());
    for i in 0..n {
        let cluster = &host[i / 256 * 256..((i / 256 + 1) * 256).min(n)];
        assert_eq!(sums[i], cluster.iter().sum::<f32>(), "sum at {i}");
        assert_eq!(maxima[i], cluster.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)), "maximum at {i}");
        assert_eq!(ranks[i], (i / 64 % 4) as i32, "rank at {i}");
    }
}

fn a_two_dimensional_cluster_numbers_its_blocks_x_first(backend: &Backend) {
    let (rows, cols) = (4, 4 * 32 - 5);
    let host = integers(rows * cols);
    let x = backend.upload(&host, [rows, cols]).unwrap();
    let mut sums = backend.zeros::<f32>([rows, cols]).unwrap();
    let mut ranks = backend.filled([rows, cols], -1i32).unwrap();
    cluster_totals_2d::launch(backend, &x, &mut sums, &mut ranks).unwrap();
    let (sums, ranks) = (backend.download(&sums).unwrap(), backend.download(&ranks).unwrap());
    for r in 0..rows {
        for c in 0..cols {
            let (first_row, first_col) = (r / 2 * 2, c / 64 * 64);
            let want: f32 = (first_row..first_row + 2)
                .flat_map(|rr| (first_col..(first_col + 64).min(cols)).map(move |cc| rr * cols + cc))
                .map(|k| host[k])
                .sum();
            assert_eq!(sums[r * cols + c], want, "sum at ({r}, {c})");
            assert_eq!(ranks[r * cols + c], (c / 32 % 2 + r % 2 * 2) as i32, "rank at ({r}, {c})");
        }
    }
}

fn a_grid_that_is_not_whole_clusters_is_refused(backend: &Backend) {
    // 5 blocks in clusters of 4
    let n = 5 * 64;
    let x = backend.upload(&integers(n), [n]).unwrap();
    let (mut sums, mut maxima) = (backend.zeros::<f32>([n]).unwrap(), backend.zeros::<f32>([n]).unwrap());
    let mut ranks = backend.zeros::<i32>([n]).unwrap();
    let error = cluster_totals::launch(backend, &x, &mut sums, &mut maxima, &mut ranks).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("[5, 1, 1] blocks is not a whole number of clusters of [4, 1, 1]"), "{message}");
}
