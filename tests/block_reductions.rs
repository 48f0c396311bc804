//! `block_sum` / `block_max` in thread code, two calls in a row and one call in a loop (whose
//! rounds reuse the shared scratch of the last), consecutive `let`s whose reductions share one
//! round through shared memory, an i32 maximum and the warps' votes, against the host — on the
//! simulation (three thread orders) and, ignored without one, on a GPU.

mod common;

use common::random_floats;
use tessera::prelude::*;
use tessera::Backend;

/// y[row] = (max of the row) + (sum of the row): two reductions, each run once.
#[tile_kernel(threads = 128, vector = 1)]
fn max_plus_sum(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut m = -f32::INFINITY;
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        m = max(m, x[[row, c]]);
        s += x[[row, c]];
    }
    let total = block_max(m) + block_sum(s);
    if thread_index() == 0 {
        y[row] = total;
    }
}

/// y[row] = Σ over chunks of 128 columns of (the chunk's maximum): one reduction per chunk, in
/// a loop, so each round reuses the scratch of the last.
#[tile_kernel(threads = 128, vector = 1)]
fn sum_of_chunk_maxima(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut total = 0.0f32;
    for chunk in 0..cdiv(C, THREADS) {
        let c = chunk * THREADS + thread_index();
        let mut v = f32::NEG_INFINITY; // the spelling Rust users reach for (as -f32::INFINITY)
        if c < C {
            v = x[[row, c]];
        }
        total += block_max(v);
    }
    if thread_index() == 0 {
        y[row] = total;
    }
}

/// y[row] = (Σx, Σx², Σx³, max x, −min x): three sums in one round, then two maxima in another,
/// over a block of three warps.
#[tile_kernel(threads = 96, vector = 1, require(K == 5))]
fn row_moments(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, K)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    let mut q = 0.0f32;
    let mut k = 0.0f32;
    let mut m = -f32::INFINITY;
    let mut n = -f32::INFINITY;
    for c in (thread_index()..C).step_by(THREADS) {
        let v = x[[row, c]];
        s += v;
        q += v * v;
        k += v * v * v;
        m = max(m, v);
        n = max(n, -v);
    }
    let sum = block_sum(s);
    let squares = block_sum(q);
    let cubes = block_sum(k);
    let largest = block_max(m);
    let negated_smallest = block_max(n);
    if thread_index() == 0 {
        y[[row, 0]] = sum;
        y[[row, 1]] = squares;
        y[[row, 2]] = cubes;
        y[[row, 3]] = largest;
        y[[row, 4]] = negated_smallest;
    }
}

/// y[row] = the largest element of an i32 row, from `i32::MIN` (a row may be all negative, and
/// a short one leaves most threads at their start), over a loop whose range is parenthesised.
#[tile_kernel(threads = 64, vector = 1)]
fn row_maximum_i32(x: Global<i32, (R, C)>, y: GlobalMut<i32, (R,)>) {
    let (row,) = grid(R);
    let mut m = i32::MIN;
    for chunk in (0..cdiv(C, THREADS)) {
        let c = chunk * THREADS + thread_index();
        if c < C {
            m = max(m, x[[row, c]]);
        }
    }
    let largest = block_max(m);
    if thread_index() == 0 {
        y[row] = largest;
    }
}

/// flags[row, warp] = 2 if every element of the warp's run of the row is positive (`warp_all`),
/// plus 1 if any is (`warp_any`); lanes past the row's end vote as if positive for `all` and
/// not for `any`.
#[tile_kernel(threads = 64, vector = 1, require(W == 2))]
fn warp_votes(x: Global<f32, (R, C)>, flags: GlobalMut<i32, (R, W)>) {
    let (row,) = grid(R);
    let c = thread_index();
    let mut v = 0.0f32;
    if c < C {
        v = x[[row, c]];
    }
    let mut votes = 0;
    if warp_all(c >= C || v > 0.0) {
        votes += 2;
    }
    if warp_any(c < C && v > 0.0) {
        votes += 1;
    }
    if lane() == 0 {
        flags[[row, warp_index()]] = votes;
    }
}

on_both_backends!(
    block_reductions_match_the_host,
    reductions_in_one_round_match_the_host,
    an_integer_maximum_starts_from_i32_min,
    the_warps_votes_match_the_host
);

fn the_warps_votes_match_the_host(backend: &Backend) {
    assert!(warp_votes::KERNEL.cuda_source().contains("__all_sync(0xffffffff, "));
    let cols = 50;
    // rows: all positive, all negative, one negative in the second warp's run, one positive in
    // the first warp's
    let mut host = vec![1.0f32; 4 * cols];
    host[cols..2 * cols].iter_mut().for_each(|v| *v = -1.0);
    host[2 * cols + 40] = -1.0;
    host[3 * cols..4 * cols].iter_mut().for_each(|v| *v = -1.0);
    host[3 * cols + 5] = 2.0;
    let x = backend.upload(&host, [4, cols]).unwrap();
    let mut flags = backend.zeros::<i32>([4, 2]).unwrap();
    warp_votes::launch(backend, &x, &mut flags).unwrap();
    let got = backend.download(&flags).unwrap();
    let vote = |run: &[f32]| 2 * i32::from(run.iter().all(|&v| v > 0.0)) + i32::from(run.iter().any(|&v| v > 0.0));
    let want: Vec<i32> = (0..4)
        .flat_map(|r| [vote(&host[r * cols..r * cols + 32]), vote(&host[r * cols + 32..(r + 1) * cols])])
        .collect();
    assert_eq!(want, [3, 3, 0, 0, 3, 1, 1, 0]);
    assert_eq!(got, want);
}

fn an_integer_maximum_starts_from_i32_min(backend: &Backend) {
    assert!(row_maximum_i32::KERNEL.cuda_source().contains("int m = (-2147483647 - 1);"));
    for (rows, cols) in [(3, 1), (4, 63), (2, 200)] {
        // every element negative, down to i32::MIN + 1
        let host: Vec<i32> = (0..rows * cols).map(|i| -1 - ((i as i64 * 7919 % 100_003) as i32) * 21_474).collect();
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let mut y = backend.zeros::<i32>([rows]).unwrap();
        row_maximum_i32::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            let want = host[r * cols..(r + 1) * cols].iter().copied().max().unwrap();
            assert_eq!(got[r], want, "{rows}×{cols}: the maximum of row {r}");
        }
    }
}

fn reductions_in_one_round_match_the_host(backend: &Backend) {
    // the lets became two rounds, one pair of barriers each
    let source = row_moments::KERNEL.cuda_source();
    assert!(source.contains("tessera_block_sums(tessera_sums_of_sum_squares_cubes, tid, THREADS);"), "{source}");
    assert!(
        source.contains("tessera_block_maxima(tessera_maxima_of_largest_negated_smallest, tid, THREADS);"),
        "{source}"
    );
    for (rows, cols) in [(3, 1), (5, 95), (4, 96), (6, 97), (2, 1000)] {
        let host = random_floats(rows * cols, (rows * 17 + cols) as u64);
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let mut y = backend.zeros::<f32>([rows, 5]).unwrap();
        row_moments::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            let row: Vec<f64> = host[r * cols..(r + 1) * cols].iter().map(|&v| f64::from(v)).collect();
            let sums = [1, 2, 3].map(|power| row.iter().map(|v| v.powi(power)).sum::<f64>());
            for (i, want) in sums.into_iter().enumerate() {
                let g = f64::from(got[r * 5 + i]);
                assert!((g - want).abs() < 1e-4 * (1.0 + want.abs()), "{rows}×{cols}: y[{r}][{i}] = {g}, want {want}");
            }
            let largest = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            let smallest = row.iter().fold(f64::INFINITY, |m, &v| m.min(v));
            assert_eq!(f64::from(got[r * 5 + 3]), largest, "{rows}×{cols}: the maximum of row {r}");
            assert_eq!(f64::from(got[r * 5 + 4]), -smallest, "{rows}×{cols}: minus the minimum of row {r}");
        }
    }
}

fn block_reductions_match_the_host(backend: &Backend) {
    for (rows, cols) in [(3, 1), (5, 127), (4, 128), (6, 129), (2, 1000)] {
        let host = random_floats(rows * cols, (rows * 13 + cols) as u64);
        let x = backend.upload(&host, [rows, cols]).unwrap();
        let mut y = backend.zeros::<f32>([rows]).unwrap();
        max_plus_sum::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        let mut z = backend.zeros::<f32>([rows]).unwrap();
        sum_of_chunk_maxima::launch(backend, &x, &mut z).unwrap();
        let chunk_maxima = backend.download(&z).unwrap();
        for r in 0..rows {
            let row = &host[r * cols..(r + 1) * cols];
            let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let sum: f64 = row.iter().map(|&v| f64::from(v)).sum();
            let want = f64::from(max) + sum;
            assert!(
                (f64::from(got[r]) - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{rows}×{cols}: y[{r}] = {}, want {want}",
                got[r]
            );
            let want: f32 = row.chunks(128).map(|chunk| chunk.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v))).sum();
            assert_eq!(chunk_maxima[r], want, "{rows}×{cols}: the chunks' maxima of row {r}");
        }
    }
}
