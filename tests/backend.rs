//! Choosing where kernels run: `Backend::detect()` takes the GPU when there is one and the
//! CPU simulation otherwise, and its Display says which (and why); both backends take the
//! same tensors and the same typed launches.

use tessera::catalog::copy;
use tessera::{Backend, Gpu, Location, Simulator};

#[test]
fn detect_picks_the_gpu_when_there_is_one_else_the_simulation_and_says_which() {
    let backend = Backend::detect().unwrap_or_else(|e| panic!("no backend at all: {e}"));
    let text = backend.to_string();
    match Gpu::new(0) {
        Ok(gpu) => {
            assert!(!backend.is_simulated(), "{text}");
            assert!(text.starts_with("GPU 0: "), "{text}");
            assert!(text.contains(gpu.name()), "{text}");
        }
        Err(no_gpu) => {
            assert!(backend.is_simulated(), "{text}");
            assert!(text.starts_with("SIMULATED on the CPU"), "{text}");
            assert!(text.contains(&no_gpu.to_string()), "{text}");
            let sim = backend.as_simulator().unwrap();
            assert_eq!(sim.no_gpu_reason(), Some(no_gpu.to_string().as_str()));
        }
    }
}

#[test]
fn the_typed_launch_takes_a_backend_or_a_simulator_alike() {
    let sim = Simulator::new().unwrap();
    let host: Vec<f32> = (0..3000).map(|i| i as f32).collect();
    let x = sim.upload(&host, [3000]).unwrap();
    assert_eq!(x.location(), Location::Host);
    let mut y = sim.zeros::<f32>([3000]).unwrap();
    let launched = copy::copy_f32x2::launch(&sim, &x, &mut y).unwrap();
    assert!(launched.simulated && launched.queued);
    assert_eq!(sim.download(&y).unwrap(), host);

    let backend = Backend::from(sim);
    let mut z = backend.filled([3000], -1.0f32).unwrap();
    copy::copy_f32_grid_stride::launch(&backend, &y, &mut z).unwrap();
    assert_eq!(backend.download(&z).unwrap(), host);
    let mut w = backend.zeros::<f32>([3000]).unwrap();
    backend.copy(&z, &mut w).unwrap();
    assert_eq!(backend.download(&w.slice(10..20).unwrap()).unwrap(), &host[10..20]);
    let timing = backend.time(0, 3, || backend.synchronize()).unwrap();
    assert_eq!(timing.samples.len(), 3);
}
