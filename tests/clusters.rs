//! Thread-block clusters (`cluster = ..`, sm_90): every thread of a cluster gets the cluster's
//! sum and maximum from `cluster_sum` / `cluster_max`, `cluster_rank()` numbers the blocks as
//! CUDA does (x fastest), and a grid that is not a whole number of clusters is a typed error —
//! on the CPU simulation (three thread and block orders; a cluster's blocks take turns there)
//! and, ignored without one, on a GPU.

mod common;

use tessera::prelude::*;
use tessera::Backend;

on_both_backends!(
    every_block_of_a_cluster_gets_the_cluster_sum_maximum_and_its_rank,
    a_two_dimensional_cluster_numbers_its_blocks_x_first,
    a_grid_that_is_not_whole_clusters_is_refused,
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
