//! The transpose family's numbers: every kernel transposes every shape exactly, tails and
//! unaligned row lengths included, with poisoned outputs — on the CPU simulation of the
//! emitted CUDA C in CI and on a GPU with
//! `cargo test --release --test transpose_numbers -- --include-ignored`.

mod common;

use common::{assert_bits_equal, random_floats, transposed, POISON};
use tessera::catalog::transpose;
use tessera::dsl::VectorWidth;
use tessera::{Argument, Backend, Order, Simulator};

on_both_backends!(
    every_transpose_kernel_transposes_every_shape_exactly,
    the_typed_launch_binds_rows_and_columns_from_both_tensors,
    the_sector_aligned_transpose_is_exact_at_every_row_phase,
    the_sector_aligned_transpose_writes_only_inside_an_unaligned_view
);

/// Tails of every kind; the GPU also takes the large tail shape.
fn shapes(backend: &Backend) -> Vec<(usize, usize)> {
    let mut shapes = vec![(1, 1), (31, 33), (1000, 1), (1, 1000), (64, 64), (17, 130), (96, 100), (129, 67)];
    if !backend.is_simulated() {
        shapes.extend([(17, 4096), (512, 512), (1024, 768), (4095, 4097)]);
    }
    shapes
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
            assert_bits_equal(&format!("{} at {rows}×{cols}", kernel.name()), &got, &want, rows);
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

/// Poisons y, transposes x into it and checks every element, naming the first wrong one.
fn assert_transposes(gpu: &Backend, kernel: &tessera::KernelDefinition, rows: usize, cols: usize) {
    let host = random_floats(rows * cols, (rows * 7919 + cols) as u64);
    let want = transposed(&host, rows, cols);
    let x = gpu.upload(&host, [rows, cols]).unwrap();
    let mut y = gpu.filled([cols, rows], f32::from_bits(POISON)).unwrap();
    kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).unwrap();
    let got = gpu.download(&y).unwrap();
    assert_bits_equal(&format!("{} at {rows}×{cols}", kernel.name()), &got, &want, rows);
}

/// Row lengths of y (= rows of x) of every residue mod 8, so every shift h of the owned
/// ranges occurs, around one and two tiles (TR = 64) and with one-row and one-column x.
fn the_sector_aligned_transpose_is_exact_at_every_row_phase(gpu: &Backend) {
    let mut shapes = vec![(1, 1), (9, 17), (17, 9), (1, 1000), (1000, 1), (7, 7), (8, 8), (72, 72), (128, 128)];
    shapes.extend((63..=72).map(|rows| (rows, 33)));
    shapes.extend((121..=136).map(|rows| (rows, 19)));
    if gpu.is_simulated() {
        shapes.extend([(1021, 67), (4095, 4097)]);
    } else {
        shapes.extend([(4096, 4096), (4095, 4097), (4097, 4095), (4095, 4096), (2049, 8)]);
    }
    for kernel in [&transpose::transpose_sector_aligned::KERNEL, &transpose::transpose_sector_aligned_down::KERNEL] {
        for &(rows, cols) in &shapes {
            assert_transposes(gpu, kernel, rows, cols);
        }
    }
}

/// y as a view 3 elements into a poisoned buffer: its rows start on no 32-byte boundary, which
/// only costs speed; every element inside is right and nothing outside is written.
fn the_sector_aligned_transpose_writes_only_inside_an_unaligned_view(gpu: &Backend) {
    let (rows, cols, offset) = (131, 45, 3);
    let host = random_floats(rows * cols, 11);
    let want = transposed(&host, rows, cols);
    let x = gpu.upload(&host, [rows, cols]).unwrap();
    let mut y = gpu.filled([rows * cols + 16], f32::from_bits(POISON)).unwrap();
    let mut view = y.slice_mut(offset..offset + rows * cols).unwrap().reshape([cols, rows]).unwrap();
    transpose::transpose_sector_aligned::launch(gpu, &x, &mut view).unwrap();
    let got = gpu.download(&y).unwrap();
    for (i, (g, w)) in got[offset..offset + rows * cols].iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "y[{}][{}] = {g} (want {w})", i / rows, i % rows);
    }
    assert!(
        got[..offset].iter().chain(&got[offset + rows * cols..]).all(|v| v.to_bits() == POISON),
        "wrote outside the view"
    );
}

/// Which block writes each element of y: the emitted kernel with its store of y made to store
/// the block's number instead. Every 32-byte sector of y (y's base is aligned here) must come
/// from one block, except those where a row of y ends and the next begins.
#[test]
fn every_sector_of_y_is_written_by_one_block() {
    let source = transpose::transpose_sector_aligned::CUDA_SOURCE;
    let mut stores = 0;
    let source: String = source
        .lines()
        .map(|line| match line.trim_start().strip_prefix("y[").and_then(|rest| rest.split_once("] = ")) {
            Some((index, _)) => {
                stores += 1;
                format!("y[{index}] = (float)(blockIdx.y * gridDim.x + blockIdx.x);\n")
            }
            None => format!("{line}\n"),
        })
        .collect();
    assert_eq!(stores, 2, "the stores of y changed; update this test:\n{source}");
    let sim = Simulator::new().unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"));
    // (rows, cols) of x: row lengths of y of several residues mod 8, several blocks per row
    for (rows, cols) in [(199, 70), (200, 9), (333, 65), (130, 3)] {
        let x = sim.upload(&random_floats(rows * cols, 5), [rows, cols]).unwrap();
        let mut y = sim.filled([cols, rows], -1.0f32).unwrap();
        let grid = [cols.div_ceil(64) as u32, rows.div_ceil(64) as u32, 1];
        sim.run_source(
            &source,
            "transpose_sector_aligned",
            &mut [
                Argument::input("x", &x),
                Argument::output("y", &mut y),
                Argument::scalar("R", rows as i32),
                Argument::scalar("C", cols as i32),
                Argument::scalar("x_ld", cols as i32),
                Argument::scalar("y_ld", rows as i32),
            ],
            grid,
            [256, 1, 1],
            &[Order::Forward],
        )
        .unwrap();
        let writer = sim.download(&y).unwrap();
        assert!(writer.iter().all(|w| *w >= 0.0), "{rows}×{cols}: an element of y was not written");
        for (sector, writers) in writer.chunks(8).enumerate() {
            let (first, last) = (sector * 8, (sector * 8 + writers.len() - 1));
            if first / rows != last / rows {
                continue; // straddles two rows of y
            }
            assert!(
                writers.iter().all(|w| *w == writers[0]),
                "{rows}×{cols}: sector {sector} (y[{}][{}..={}]) is written by blocks {writers:?}",
                first / rows,
                first % rows,
                last % rows
            );
        }
    }
}
