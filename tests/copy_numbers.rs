//! The copy family's numbers: every width and form copies every length exactly (outputs
//! poisoned first), unaligned views take a narrower width and never fault, mismatched shapes
//! are errors. Each test body runs on two backends: the CPU simulation of the emitted CUDA C
//! (here, in CI, at small lengths, under several thread orders) and a real GPU:
//! `cargo test --release --test copy_numbers -- --include-ignored` on a GPU machine.

use tessera::catalog::copy;
use tessera::dsl::{LaunchPlanError, VectorWidth};
use tessera::{Argument, Backend, Error, Gpu};

mod common;

use common::{random_floats, POISON};

on_both_backends!(
    every_copy_kernel_copies_every_length_exactly,
    the_typed_launch_binds_shapes_and_computes_the_grid,
    unaligned_views_take_a_narrower_width_and_never_fault,
    mismatched_shapes_are_an_error_and_launch_nothing,
);

/// Tails of every kind; the GPU also takes the lengths that measure bandwidth.
fn lengths(backend: &Backend) -> Vec<usize> {
    let mut lengths = vec![0usize, 1, 3, 255, 256, 257, 1023, 1024, 1025, 4097, 65_537];
    if !backend.is_simulated() {
        lengths.extend([(1 << 20) + 1, (1 << 28) + 3]);
    }
    lengths
}

fn assert_bitwise_equal(name: &str, len: usize, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name} at length {len}");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        let unwritten = got[i].to_bits() == POISON;
        panic!(
            "{name} at length {len}: element {i} is {} (want {}){}",
            got[i],
            want[i],
            if unwritten { ", never written" } else { "" }
        );
    }
}

fn every_copy_kernel_copies_every_length_exactly(backend: &Backend) {
    for len in lengths(backend) {
        let host = random_floats(len, len as u64 + 7);
        let x = backend.upload(&host, [len]).unwrap();
        for kernel in copy::ALL {
            let mut y = backend.filled([len], f32::from_bits(POISON)).unwrap();
            let launched = kernel
                .launch(backend, &mut [Argument::input("x", &x), Argument::output("y", &mut y)])
                .unwrap_or_else(|e| panic!("{} at length {len}: {e}", kernel.name()));
            assert_eq!(launched.queued, len > 0, "{}: an empty grid must not launch", kernel.name());
            assert_eq!(launched.simulated, backend.is_simulated());
            assert_eq!(launched.vector, kernel.ir().unwrap().config.vector, "aligned tensors keep the declared width");
            let got = backend.download(&y).unwrap();
            assert_bitwise_equal(kernel.name(), len, &got, &host);
        }
    }
}

fn the_typed_launch_binds_shapes_and_computes_the_grid(backend: &Backend) {
    let host = random_floats(4097, 1);
    let x = backend.upload(&host, [4097]).unwrap();
    let mut y = backend.zeros::<f32>([4097]).unwrap();
    let launched = copy::copy_f32x4::launch(backend, &x, &mut y).unwrap();
    assert_eq!(launched.grid, [5, 1, 1]); // cdiv(4097, 1024)
    assert_eq!(launched.block, [256, 1, 1]);
    assert_eq!(launched.registers > 0, !backend.is_simulated(), "ptxas figures exist on the GPU only");
    assert_bitwise_equal("copy_f32x4", 4097, &backend.download(&y).unwrap(), &host);

    // a fresh poisoned output, so the second kernel's values are its own
    let mut y = backend.filled([4097], f32::from_bits(POISON)).unwrap();
    let grid_stride = copy::copy_f32x4_grid_stride::launch(backend, &x, &mut y).unwrap();
    assert!(grid_stride.grid[0] <= 5 && grid_stride.grid[0] >= 1, "{grid_stride:?}");
    assert_bitwise_equal("copy_f32x4_grid_stride", 4097, &backend.download(&y).unwrap(), &host);
}

fn unaligned_views_take_a_narrower_width_and_never_fault(backend: &Backend) {
    let len = 100_003;
    let host = random_floats(len + 8, 3);
    let x = backend.upload(&host, [len + 8]).unwrap();
    // (offset of x, offset of y, the widest width both allow)
    for (x_offset, y_offset, width) in
        [(1, 0, VectorWidth::W1), (2, 6, VectorWidth::W2), (3, 3, VectorWidth::W1), (4, 8, VectorWidth::W4)]
    {
        for kernel in [&copy::copy_f32x4::KERNEL, &copy::copy_f32x4_grid_stride::KERNEL, &copy::copy_f32x2::KERNEL] {
            let mut y = backend.filled([len + 8], f32::from_bits(POISON)).unwrap();
            let source = x.slice(x_offset..x_offset + len).unwrap();
            let mut target = y.slice_mut(y_offset..y_offset + len).unwrap();
            let launched = kernel
                .launch(backend, &mut [Argument::input("x", &source), Argument::output("y", &mut target)])
                .unwrap();
            let declared = kernel.ir().unwrap().config.vector;
            assert_eq!(launched.vector, width.min(declared), "{} with offsets {x_offset}, {y_offset}", kernel.name());
            backend
                .synchronize()
                .unwrap_or_else(|e| panic!("{} faulted with offsets {x_offset}, {y_offset}: {e}", kernel.name()));
            let got = backend.download(&y).unwrap();
            assert_bitwise_equal(kernel.name(), len, &got[y_offset..y_offset + len], &host[x_offset..x_offset + len]);
            assert!(
                got[..y_offset].iter().chain(&got[y_offset + len..]).all(|v| v.to_bits() == POISON),
                "{} wrote outside its view",
                kernel.name()
            );
        }
    }
}

fn mismatched_shapes_are_an_error_and_launch_nothing(backend: &Backend) {
    let x = backend.upload(&random_floats(10, 5), [10]).unwrap();
    let mut y = backend.filled([11], f32::from_bits(POISON)).unwrap();
    match copy::copy_f32x4::launch(backend, &x, &mut y) {
        Err(Error::Plan { source: LaunchPlanError::ShapeMismatch { symbol, first_value, value, .. }, .. }) => {
            assert_eq!((symbol.as_str(), first_value, value), ("N", 10, 11));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    let mut matrix = backend.zeros::<f32>([2, 5]).unwrap();
    assert!(matches!(
        copy::copy_f32x4::launch(backend, &x, &mut matrix),
        Err(Error::Plan { source: LaunchPlanError::RankMismatch { expected: 1, actual: 2, .. }, .. })
    ));
    assert!(backend.download(&y).unwrap().iter().all(|v| v.to_bits() == POISON));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_second_gpu_handle_reuses_the_disk_cache() {
    let dir = std::env::temp_dir().join(format!("tessera-gpu-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let host = random_floats(64, 9);
    // Each handle starts with an empty in-memory cache: only the disk can serve the second.
    let copy_with_a_fresh_handle = || {
        let gpu = Gpu::new(0)
            .unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
            .with_disk_cache(Some(tessera::DiskCache::new(&dir)));
        let x = gpu.upload(&host, [64]).unwrap();
        let mut y = gpu.zeros::<f32>([64]).unwrap();
        copy::copy_f32::launch(&gpu, &x, &mut y).unwrap();
        assert_bitwise_equal("copy_f32", 64, &gpu.download(&y).unwrap(), &host);
    };
    let entry = || {
        let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(entries.len(), 1, "one compiled kernel, one cache entry: {entries:?}");
        std::fs::metadata(&entries[0]).unwrap().modified().unwrap()
    };
    copy_with_a_fresh_handle();
    let written = entry();
    copy_with_a_fresh_handle();
    assert_eq!(entry(), written, "the second handle compiled again and rewrote the entry instead of reading it");
}
