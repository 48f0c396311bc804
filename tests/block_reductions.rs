//! `block_sum` / `block_max` in thread code, two calls in a row and one call in a loop (whose
//! rounds reuse the shared scratch of the last), against the host — on the simulation (three
//! thread orders) and, ignored without one, on a GPU.

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

on_both_backends!(block_reductions_match_the_host);

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
