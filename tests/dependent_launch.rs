//! Later passes launched as programmatic dependents of the pass before (`launch_dependent`):
//! every kernel waits for the grid before it before touching memory, so a dependent pass reads
//! what the pass before wrote however early its launch starts — many chains queued without a
//! synchronisation between them all give the reference's results, with the overlap on and off.

mod common;

use tessera::catalog::{self, gemv, reduce};
use tessera::{Backend, Gpu};

/// Every catalog kernel waits for the grid before it, then lets the next one launch, before
/// its first statement: the contract that makes a dependent launch of any of them safe.
#[test]
fn every_catalog_kernel_waits_for_the_grid_before_it_first() {
    for kernel in catalog::all() {
        let source = kernel.cuda_source();
        let body =
            source.split_once("    const int tid = ").unwrap_or_else(|| panic!("{}: no thread index", kernel.name())).1;
        let mut lines = body.lines().skip(1).map(str::trim_start);
        assert!(
            lines.next().is_some_and(|l| l.starts_with("tessera_wait_for_prior_grid();")),
            "{}: the first statement after the thread index must wait for the grid before",
            kernel.name()
        );
        assert!(
            lines.next().is_some_and(|l| l.starts_with("tessera_launch_dependents();")),
            "{}: the trigger for the next grid must follow the wait",
            kernel.name()
        );
    }
}

/// `chains` Aᵀ·x products of 4097 × 2000 (the row split: pass 2 a dependent of pass 1) and
/// sums of 2^20 + 3 floats (the finish a dependent of the partials), all queued before any
/// result is read back, each against its f64 reference.
fn chained_passes_read_what_the_pass_before_wrote(backend: &Backend, chains: usize, dependent: bool) {
    let (m, n) = (4097, 2000);
    assert!(gemv::row_slices::<f32>(m, n) > 1, "the shape must take the row split");
    let host_a = common::random_floats(m * n, 5);
    let a = backend.upload(&host_a, [m, n]).unwrap();
    let inputs: Vec<Vec<f32>> = (0..chains).map(|i| common::random_floats(m, 100 + i as u64)).collect();
    let xs: Vec<_> = inputs.iter().map(|x| backend.upload(x, [m]).unwrap()).collect();
    let mut ys: Vec<_> = (0..chains).map(|_| backend.filled([n], f32::from_bits(common::POISON)).unwrap()).collect();
    for (x, y) in xs.iter().zip(ys.iter_mut()) {
        let launched = gemv::gemv_t(backend, &a, x, y).unwrap();
        assert_eq!(launched.kernel, "gemv_t_finish_f32");
        assert_eq!(launched.dependent, dependent, "the finishing pass's launch as a dependent");
    }
    for (i, (x, y)) in inputs.iter().zip(&ys).enumerate() {
        let got = backend.download(y).unwrap();
        for (j, g) in got.iter().enumerate().step_by(97) {
            let want: f64 = (0..m).map(|r| f64::from(host_a[r * n + j]) * f64::from(x[r])).sum();
            let slack: f64 = (0..m).map(|r| (f64::from(host_a[r * n + j]) * f64::from(x[r])).abs()).sum::<f64>() * 1e-6;
            assert!((f64::from(*g) - want).abs() <= slack, "chain {i}: y[{j}] = {g}, want {want}");
        }
    }
    let len = (1 << 20) + 3;
    for i in 0..chains {
        let host = common::random_floats(len, 7 + i as u64);
        let x = backend.upload(&host, [len]).unwrap();
        let got = reduce::sum_f32(backend, &x).unwrap();
        let want: f64 = host.iter().map(|&v| f64::from(v)).sum();
        let slack: f64 = host.iter().map(|&v| f64::from(v).abs()).sum::<f64>() * 1e-6;
        assert!((f64::from(got) - want).abs() <= slack, "sum {i}: {got}, want {want}");
    }
}

#[test]
fn chained_passes_read_what_the_pass_before_wrote_simulated() {
    // the simulation runs one launch at a time: nothing to overlap
    chained_passes_read_what_the_pass_before_wrote(&common::simulator(), 2, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn chained_passes_read_what_the_pass_before_wrote_on_the_gpu() {
    let gpu = Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let hopper = gpu.arch().major >= 9;
    assert_eq!(gpu.dependent_launches(), hopper, "sm_90 and later launch later passes as dependents by default");
    chained_passes_read_what_the_pass_before_wrote(&Backend::Gpu(gpu), 64, hopper);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn chained_passes_without_the_overlap_give_the_same_results_on_the_gpu() {
    let gpu = Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}")).with_dependent_launches(false);
    assert!(!gpu.dependent_launches());
    chained_passes_read_what_the_pass_before_wrote(&Backend::Gpu(gpu), 16, false);
}
