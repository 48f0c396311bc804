//! Thread-block clusters (`cluster = ..`, sm_90): every thread of a cluster gets the cluster's
//! sum and maximum from `cluster_sum` / `cluster_max` and the softmax of its values from
//! `cluster_softmax_scale` (f32 and f64 against f64), `cluster_rank()` numbers the blocks as
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
    cluster_softmax_scale_gives_the_softmax_over_the_cluster_in_f32_and_f64,
    five_reductions_in_a_row_reuse_the_exchange_slots_in_turn,
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

macro_rules! cluster_softmax {
    ($name:ident, $t:ident) => {
        /// Each thread holds x[2i] and x[2i + 1] (−∞ past the end) and writes their softmax over
        /// the cluster's 512 values: exps against its own maximum, rescaled by the cluster's
        /// (maximum, sum).
        #[tile_kernel(threads = 64, vector = 1, cluster = 4, target = sm_90, consts(TILE = 64))]
        fn $name(x: Global<$t, (N,)>, y: GlobalMut<$t, (N,)>) {
            let (bx,) = grid(cdiv(N, 2 * TILE));
            let first = 2 * (bx * TILE + thread_index());
            let mut v = [-$t::INFINITY; 2];
            let mut m = -$t::INFINITY;
            for k in 0..2 {
                if first + k < N {
                    v[k] = x[first + k];
                    m = max(m, v[k]);
                }
            }
            let mut s: $t = 0.0;
            // a thread whose values are all −∞ (or past the end) holds zeros, its sum 0
            for k in 0..2 {
                if m > -$t::INFINITY {
                    v[k] = exp(v[k] - m);
                } else {
                    v[k] = 0.0;
                }
                s += v[k];
            }
            let scale = cluster_softmax_scale(m, s);
            for k in 0..2 {
                if first + k < N {
                    y[first + k] = v[k] * scale;
                }
            }
        }
    };
}
cluster_softmax!(cluster_softmax_f32, f32);
cluster_softmax!(cluster_softmax_f64, f64);

/// Five cluster sums in a row (the exchange's two sets of slots and mbarriers each used again,
/// in both parities), then a maximum: round k adds x[i] · (k + 1) + the previous round's sum.
#[tile_kernel(threads = 64, vector = 1, cluster = 4, target = sm_90, consts(TILE = 64))]
fn cluster_rounds(x: Global<f32, (N,)>, rounds: GlobalMut<f32, (N,)>, maxima: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    let i = bx * TILE + thread_index();
    let mut v = 0.0f32;
    if i < N {
        v = x[i];
    }
    let mut carried = 0.0f32;
    for k in 0..5 {
        carried = cluster_sum(v * (k + 1) as f32 + carried / 256.0f32);
    }
    let largest = cluster_max(v + carried);
    if i < N {
        rounds[i] = carried;
        maxima[i] = largest;
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

/// Three clusters of 512 values, the last 100 short (its last block partly past the end, a
/// block and a half of threads with no values); values from −60 to 60 so that the blocks'
/// maxima differ by more than exp's range, a whole block of −∞ in the second cluster and single
/// −∞ values among finite ones.
fn softmax_inputs() -> Vec<f64> {
    let n = 3 * 512 - 100;
    (0..n)
        .map(|i| match i {
            _ if (512 + 256..512 + 384).contains(&i) || i % 97 == 5 => f64::NEG_INFINITY,
            _ => ((i * 37 + 11) % 241) as f64 / 2.0 - 60.0 + (i / 128) as f64 * 7.0 % 30.0,
        })
        .collect()
}

/// The softmax of each cluster's 512 values, in f64.
fn cluster_softmax_reference(x: &[f64]) -> Vec<f64> {
    x.chunks(512)
        .flat_map(|cluster| {
            let maximum = cluster.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = cluster.iter().map(|&v| (v - maximum).exp()).sum();
            cluster.iter().map(move |&v| (v - maximum).exp() / total)
        })
        .collect()
}

fn cluster_softmax_scale_gives_the_softmax_over_the_cluster_in_f32_and_f64(backend: &Backend) {
    let host = softmax_inputs();
    let want = cluster_softmax_reference(&host);
    let n = host.len();
    let narrow: Vec<f32> = host.iter().map(|&v| v as f32).collect();
    let want_from_narrow = cluster_softmax_reference(&narrow.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
    let x = backend.upload(&narrow, [n]).unwrap();
    let mut y = backend.filled([n], f32::NAN).unwrap();
    cluster_softmax_f32::launch(backend, &x, &mut y).unwrap();
    for (i, (got, want)) in backend.download(&y).unwrap().iter().zip(&want_from_narrow).enumerate() {
        assert!((f64::from(*got) - want).abs() <= 1e-6 * want + 1e-30, "f32 softmax at {i}: {got} against {want}");
    }
    let x = backend.upload(&host, [n]).unwrap();
    let mut y = backend.filled([n], f64::NAN).unwrap();
    cluster_softmax_f64::launch(backend, &x, &mut y).unwrap();
    for (i, (got, want)) in backend.download(&y).unwrap().iter().zip(&want).enumerate() {
        assert!((got - want).abs() <= 1e-14 * want + 1e-300, "f64 softmax at {i}: {got} against {want}");
    }
    // the values are a softmax: each cluster's sum to 1 (the −∞ block and values give 0)
    assert!(want.chunks(512).all(|c| (c.iter().sum::<f64>() - 1.0).abs() < 1e-12));
    assert!(want[512 + 256..512 + 384].iter().all(|&v| v == 0.0));
}

fn five_reductions_in_a_row_reuse_the_exchange_slots_in_turn(backend: &Backend) {
    // 3 clusters of 4 blocks of 64, the last block partly past the end
    let n = 12 * 64 - 17;
    let host = integers(n);
    let x = backend.upload(&host, [n]).unwrap();
    let (mut rounds, mut maxima) = (backend.zeros::<f32>([n]).unwrap(), backend.zeros::<f32>([n]).unwrap());
    cluster_rounds::launch(backend, &x, &mut rounds, &mut maxima).unwrap();
    let (rounds, maxima) = (backend.download(&rounds).unwrap(), backend.download(&maxima).unwrap());
    for i in 0..n {
        let cluster = &host[i / 256 * 256..((i / 256 + 1) * 256).min(n)];
        let threads = 256.0f64; // every thread of the cluster adds the carried sum, those past the end too
        let total: f64 = cluster.iter().map(|&v| f64::from(v)).sum();
        let mut carried = 0.0f64;
        for k in 0..5 {
            carried = total * f64::from(k + 1) + threads * carried / 256.0;
        }
        let largest = cluster.iter().map(|&v| f64::from(v)).fold(f64::NEG_INFINITY, f64::max) + carried;
        // integers and halvings of them: every partial sum is exact in f32
        assert_eq!(f64::from(rounds[i]), carried, "the fifth sum at {i}");
        let past_end = cluster.len() < 256;
        let want_max = if past_end { largest.max(carried) } else { largest };
        assert_eq!(f64::from(maxima[i]), want_max, "the maximum at {i}");
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
