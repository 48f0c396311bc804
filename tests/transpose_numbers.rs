//! The transpose family's numbers: every kernel transposes every shape exactly, tails and
//! unaligned row lengths included, with poisoned outputs — on the CPU simulation of the
//! emitted CUDA C in CI and on a GPU with
//! `cargo test --release --test transpose_numbers -- --include-ignored`.

mod common;

use common::{random_floats, POISON};
use tessera::catalog::transpose;
use tessera::dsl::VectorWidth;
use tessera::{Argument, Backend};

on_both_backends!(
    every_transpose_kernel_transposes_every_shape_exactly,
    the_typed_launch_binds_rows_and_columns_from_both_tensors
);

/// Tails of every kind; the GPU also takes the large tail shape.
fn shapes(backend: &Backend) -> Vec<(usize, usize)> {
    let mut shapes = vec![(1, 1), (31, 33), (1000, 1), (1, 1000), (64, 64), (17, 130), (96, 100), (129, 67)];
    if !backend.is_simulated() {
        shapes.extend([(17, 4096), (512, 512), (1024, 768), (4095, 4097)]);
    }
    shapes
}

fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    for r in 0..rows {
        for c in 0..cols {
            y[c * rows + r] = x[r * cols + c];
        }
    }
    y
}

fn every_transpose_kernel_transposes_every_shape_exactly(gpu: &Backend) {
    for (rows, cols) in shapes(gpu) {
        let host = random_floats(rows * cols, (rows * 7919 + cols) as u64);
        let want = transposed(&host, rows, cols);
        let x = gpu.upload(&host, [rows, cols]).unwrap();
        for kernel in transpose::ALL {
            let mut y = gpu.filled([cols, rows], f32::from_bits(POISON)).unwrap();
            let launched = kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).unwrap();
            // rows of x are `cols` long and rows of y `rows` long: both must split into vectors
            let declared = kernel.ir().unwrap().config.vector;
            let fits = |w: u32| rows % w as usize == 0 && cols % w as usize == 0;
            let expected = [VectorWidth::W4, VectorWidth::W2, VectorWidth::W1]
                .into_iter()
                .find(|w| *w <= declared && fits(w.get()))
                .unwrap_or(VectorWidth::W1);
            assert_eq!(launched.vector, expected, "{} at {rows}×{cols}", kernel.name());
            let got = gpu.download(&y).unwrap();
            if let Some(i) = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits()) {
                let unwritten = got[i].to_bits() == POISON;
                panic!(
                    "{} at {rows}×{cols}: y[{}][{}] = {} (want {}){}",
                    kernel.name(),
                    i / rows,
                    i % rows,
                    got[i],
                    want[i],
                    if unwritten { ", never written" } else { "" }
                );
            }
        }
    }
}

fn the_typed_launch_binds_rows_and_columns_from_both_tensors(gpu: &Backend) {
    let x = gpu.upload(&random_floats(33 * 31, 1), [33, 31]).unwrap();
    let mut wrong = gpu.zeros::<f32>([33, 31]).unwrap();
    let error = transpose::transpose_padded::launch(gpu, &x, &mut wrong).unwrap_err().to_string();
    assert!(error.contains("shape symbol `C` is 31 from `x` (dimension 1) but 33 from `y` (dimension 0)"), "{error}");
    let mut y = gpu.zeros::<f32>([31, 33]).unwrap();
    let launched = transpose::transpose_padded::launch(gpu, &x, &mut y).unwrap();
    assert_eq!(launched.grid, [1, 2, 1]); // cdiv(31, 32) × cdiv(33, 32)
    assert_eq!(launched.block, [32, 8, 1]);
}
