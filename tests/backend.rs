//! Choosing where kernels run: `Backend::detect()` takes the GPU when there is one and the
//! CPU simulation otherwise, and its Display says which (and why); both backends take the
//! same tensors and the same typed launches.

use tessera::catalog::copy;
use tessera::{Argument, Backend, Error, Gpu, Location, Simulator};

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
    // no repetitions measure nothing: an error, not a NaN median
    assert!(matches!(backend.time(2, 0, || backend.synchronize()), Err(tessera::Error::NoRepetitions)));
    assert_eq!(timing.samples.len(), 3);
}

/// A tensor lent with `Argument::input` (a shared borrow) where the kernel writes: refused on
/// both backends before anything runs.
fn refuses_an_input_where_the_kernel_writes(backend: &Backend) {
    let x = backend.upload(&[1.0f32; 64], [64]).unwrap();
    let y = backend.zeros::<f32>([64]).unwrap();
    let refused = copy::copy_f32x2::KERNEL.launch(backend, &mut [Argument::input("x", &x), Argument::input("y", &y)]);
    assert!(
        matches!(&refused, Err(Error::ArgumentType { position: 1, given, .. }) if given.contains("read-only")),
        "{refused:?}"
    );
    assert_eq!(backend.download(&y).unwrap(), vec![0.0f32; 64]);
}

/// Shapes whose element count overflows a usize: an error, not a buffer sized by the wrapped
/// product under a shape a launch would trust.
fn refuses_shapes_that_overflow(backend: &Backend) {
    let huge = [1usize << 40, 1 << 40];
    assert!(matches!(backend.zeros::<f32>(huge), Err(Error::ShapeTooLarge { .. })));
    assert!(matches!(backend.upload::<f32>(&[], huge), Err(Error::ShapeTooLarge { .. })));
    assert!(matches!(backend.upload::<f32>(&[], [1usize << 33, 1 << 31, 0]), Ok(_)));
    let x = backend.upload(&[0.0f32; 4], [4]).unwrap();
    assert!(matches!(x.reshape(huge), Err(Error::ShapeTooLarge { .. })));
}

#[test]
fn simulated_an_input_is_refused_where_the_kernel_writes() {
    refuses_an_input_where_the_kernel_writes(&Backend::from(Simulator::new().unwrap()));
}

#[test]
fn simulated_shapes_whose_element_count_overflows_are_errors() {
    refuses_shapes_that_overflow(&Backend::from(Simulator::new().unwrap()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn on_the_gpu_an_input_is_refused_where_the_kernel_writes_and_overflowing_shapes_are_errors() {
    let gpu = Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let backend = Backend::from(gpu);
    refuses_an_input_where_the_kernel_writes(&backend);
    refuses_shapes_that_overflow(&backend);
}

/// y = 2·x, one element a thread: the grid sized by `THREADS`, as a CUDA programmer writes it.
#[tessera::tile_kernel(threads = 128, vector = 1)]
fn doubled_by_threads(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (b,) = grid(cdiv(N, THREADS));
    let i = b * THREADS + thread_index();
    if i < N {
        y[i] = 2.0 * x[i];
    }
}

#[test]
fn threads_and_vector_size_the_grid_like_any_constant() {
    let sim = Simulator::new().unwrap();
    let host: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let x = sim.upload(&host, [1000]).unwrap();
    let mut y = sim.zeros::<f32>([1000]).unwrap();
    let launched = doubled_by_threads::launch(&sim, &x, &mut y).unwrap();
    assert_eq!(launched.grid, [8, 1, 1]);
    assert_eq!(sim.download(&y).unwrap(), host.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
}
