//! What one launch costs the host: the time a `launch` call takes to return (argument checks,
//! shape binding, the compiled-kernel lookup, the stream-K workspace and the driver call),
//! beside cuBLAS's `cublasSgemm` call, for SGEMMs and two thread-code kernels (a LayerNorm
//! and a softmax). The GPU work is tiny and the calls are timed in batches
//! short enough that the stream's queue never fills, so the time is the host's alone.
//!
//! `cargo run --release --example launch_overhead -- [--calls N]`

use std::time::Instant;

use tessera::catalog::{norm, sgemm, softmax};
use tessera::{Gpu, KernelDefinition};

/// Calls between synchronizations: well under the driver's queue depth.
const BATCH: usize = 100;

/// What one launch costs the host, beside cuBLAS's `cublasSgemm` call.
#[derive(clap::Parser)]
#[command(name = "launch_overhead", args_override_self = true)]
struct Options {
    /// Calls timed (in batches of 100 between synchronizations).
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    calls: u64,
}

fn main() {
    let calls = <Options as clap::Parser>::parse().calls as usize;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(reason) => {
            println!("No GPU here ({reason}): nothing to time.");
            return;
        }
    };
    if let Err(error) = run(&gpu, calls) {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

/// Median over batches of the host microseconds per call of `call`.
fn per_call_us(
    gpu: &Gpu,
    calls: usize,
    mut call: impl FnMut() -> Result<(), tessera::Error>,
) -> Result<f64, tessera::Error> {
    call()?; // compile, load, allocate: not part of the steady state
    gpu.synchronize()?;
    let mut samples = Vec::new();
    for _ in 0..calls.div_ceil(BATCH) {
        let start = Instant::now();
        for _ in 0..BATCH {
            call()?;
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
        gpu.synchronize()?;
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn run(gpu: &Gpu, calls: usize) -> Result<(), tessera::Error> {
    let (m, n, k) = (64usize, 64usize, 64usize);
    let a = gpu.upload(&vec![1.0f32; m * k], [m, k])?;
    let b = gpu.upload(&vec![1.0f32; k * n], [k, n])?;
    let mut c = gpu.zeros::<f32>([m, n])?;
    println!("{} — host time per call, median of batches of {BATCH} ({calls} calls), {m}×{n}×{k}", gpu.name());
    let blas = gpu.cublas()?;
    let us = per_call_us(gpu, calls, || blas.sgemm(1.0, &a, &b, 0.0, &mut c))?;
    println!("{:<16} {us:>8.1} µs", "cublasSgemm");
    let kernels: [&KernelDefinition; 3] =
        [&sgemm::sgemm_v3::KERNEL, &sgemm::sgemm_v11::KERNEL, &sgemm::sgemm_v12::KERNEL];
    for kernel in kernels {
        let us = per_call_us(gpu, calls, || sgemm::launch(kernel, gpu, &a, &b, &mut c, 1.0, 0.0).map(|_| ()))?;
        println!("{:<16} {us:>8.1} µs", kernel.name());
    }
    // thread code: rows of 64, the GPU's share a few microseconds a call
    let (rows, cols) = (64usize, 1024usize);
    let x = gpu.upload(&vec![1.0f32; rows * cols], [rows, cols])?;
    let weight = gpu.upload(&vec![1.0f32; cols], [cols])?;
    let mut y = gpu.zeros::<f32>([rows, cols])?;
    let us =
        per_call_us(gpu, calls, || norm::layer_norm_f32::launch(gpu, &x, &weight, &weight, &mut y, 1e-5).map(|_| ()))?;
    println!("{:<16} {us:>8.1} µs", norm::layer_norm_f32::NAME);
    let us = per_call_us(gpu, calls, || softmax::softmax_aligned_f32::launch(gpu, &x, &mut y).map(|_| ()))?;
    println!("{:<16} {us:>8.1} µs", softmax::softmax_aligned_f32::NAME);
    Ok(())
}
