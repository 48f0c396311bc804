//! The copy family on a real GPU: every width and form copies every length exactly, with
//! poisoned outputs; unaligned views never fault; mismatched shapes are errors.
//! Run on the GPU machine: `cargo test --release --test gpu_copy -- --include-ignored`.

use tessera::catalog::copy;
use tessera::dsl::{LaunchPlanError, VectorWidth};
use tessera::{Error, Gpu};

/// A bit pattern no input contains, so an unwritten element cannot pass for a copied one.
const POISON: u32 = 0x7fc0_dead;

fn random_floats(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
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

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_copy_kernel_copies_every_length_exactly() {
    let gpu = gpu();
    for len in [0usize, 1, 3, 255, 256, 257, 1023, 1024, 1025, 4097, (1 << 20) + 1, (1 << 28) + 3] {
        let host = random_floats(len, len as u64 + 7);
        let x = gpu.upload(&host, [len]).unwrap();
        for kernel in copy::ALL {
            let mut y = gpu.filled([len], f32::from_bits(POISON)).unwrap();
            let launched = kernel
                .launch(&gpu, &mut [tessera::Argument::input("x", &x), tessera::Argument::output("y", &mut y)])
                .unwrap();
            assert_eq!(launched.queued, len > 0, "{}: an empty grid must not launch", kernel.name());
            assert_eq!(launched.vector, kernel.ir().unwrap().config.vector, "aligned tensors keep the declared width");
            let got = gpu.download(&y).unwrap();
            assert_bitwise_equal(kernel.name(), len, &got, &host);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_typed_launch_binds_shapes_and_computes_the_grid() {
    let gpu = gpu();
    let host = random_floats(4097, 1);
    let x = gpu.upload(&host, [4097]).unwrap();
    let mut y = gpu.zeros::<f32>([4097]).unwrap();
    let launched = copy::copy_f32x4::launch(&gpu, &x, &mut y).unwrap();
    assert_eq!(launched.grid, [5, 1, 1]); // cdiv(4097, 1024)
    assert_eq!(launched.block, [256, 1, 1]);
    assert!(launched.registers > 0);
    assert_bitwise_equal("copy_f32x4", 4097, &gpu.download(&y).unwrap(), &host);

    let grid_stride = copy::copy_f32x4_grid_stride::launch(&gpu, &x, &mut y).unwrap();
    assert!(grid_stride.grid[0] <= 5 && grid_stride.grid[0] >= 1, "{grid_stride:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unaligned_views_take_a_narrower_width_and_never_fault() {
    let gpu = gpu();
    let len = 100_003;
    let host = random_floats(len + 8, 3);
    let x = gpu.upload(&host, [len + 8]).unwrap();
    // (offset of x, offset of y, the widest width both allow)
    for (x_offset, y_offset, width) in
        [(1, 0, VectorWidth::W1), (2, 6, VectorWidth::W2), (3, 3, VectorWidth::W1), (4, 8, VectorWidth::W4)]
    {
        for kernel in [&copy::copy_f32x4::KERNEL, &copy::copy_f32x4_grid_stride::KERNEL, &copy::copy_f32x2::KERNEL] {
            let mut y = gpu.filled([len + 8], f32::from_bits(POISON)).unwrap();
            let source = x.slice(x_offset..x_offset + len).unwrap();
            let mut target = y.slice_mut(y_offset..y_offset + len).unwrap();
            let launched = kernel
                .launch(
                    &gpu,
                    &mut [tessera::Argument::input("x", &source), tessera::Argument::output("y", &mut target)],
                )
                .unwrap();
            let declared = kernel.ir().unwrap().config.vector;
            assert_eq!(launched.vector, width.min(declared), "{} with offsets {x_offset}, {y_offset}", kernel.name());
            gpu.synchronize()
                .unwrap_or_else(|e| panic!("{} faulted with offsets {x_offset}, {y_offset}: {e}", kernel.name()));
            let got = gpu.download(&y).unwrap();
            assert_bitwise_equal(kernel.name(), len, &got[y_offset..y_offset + len], &host[x_offset..x_offset + len]);
            assert!(
                got[..y_offset].iter().chain(&got[y_offset + len..]).all(|v| v.to_bits() == POISON),
                "{} wrote outside its view",
                kernel.name()
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mismatched_shapes_are_an_error_and_launch_nothing() {
    let gpu = gpu();
    let x = gpu.upload(&random_floats(10, 5), [10]).unwrap();
    let mut y = gpu.filled([11], f32::from_bits(POISON)).unwrap();
    match copy::copy_f32x4::launch(&gpu, &x, &mut y) {
        Err(Error::Plan { source: LaunchPlanError::ShapeMismatch { symbol, first_value, value, .. }, .. }) => {
            assert_eq!((symbol.as_str(), first_value, value), ("N", 10, 11));
        }
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    let mut matrix = gpu.zeros::<f32>([2, 5]).unwrap();
    assert!(matches!(
        copy::copy_f32x4::launch(&gpu, &x, &mut matrix),
        Err(Error::Plan { source: LaunchPlanError::RankMismatch { expected: 1, actual: 2, .. }, .. })
    ));
    assert!(gpu.download(&y).unwrap().iter().all(|v| v.to_bits() == POISON));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_second_gpu_handle_reuses_the_disk_cache() {
    let dir = std::env::temp_dir().join(format!("tessera-gpu-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let x = {
        let gpu = gpu().with_disk_cache(Some(tessera::DiskCache::new(&dir)));
        let x = gpu.upload(&random_floats(64, 9), [64]).unwrap();
        let mut y = gpu.zeros::<f32>([64]).unwrap();
        copy::copy_f32::launch(&gpu, &x, &mut y).unwrap();
        gpu.download(&x).unwrap()
    };
    assert_eq!(x.len(), 64);
    let entries = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(entries, 1, "one compiled kernel, one cache entry");
}
