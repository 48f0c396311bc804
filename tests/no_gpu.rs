//! Without a driver or a GPU, opening one is a typed error, never a panic; with one, it opens.

use tessera::runtime::{driver_available, Error};
use tessera::Gpu;

#[test]
fn opening_a_gpu_reports_what_is_missing() {
    match Gpu::new(0) {
        Ok(gpu) => assert!(driver_available() && !gpu.name().is_empty()),
        Err(Error::DriverMissing { tried }) => {
            assert!(!driver_available());
            assert!(tried.contains("libcuda"), "{tried}");
        }
        Err(Error::NoGpu { ordinal: 0, count }) => assert!(driver_available() && count <= 0),
        Err(other) => panic!("unexpected error opening GPU 0: {other}"),
    }
}

#[test]
fn a_device_that_does_not_exist_is_an_error() {
    match Gpu::new(4096) {
        Err(Error::NoGpu { ordinal: 4096, .. }) => assert!(driver_available()),
        Err(Error::DriverMissing { .. }) => assert!(!driver_available()),
        other => panic!("expected NoGpu or DriverMissing, got {other:?}"),
    }
}
