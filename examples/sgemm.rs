//! The SGEMM family beside cuBLAS (FP32, pedantic math) in one run: TFLOP/s, % of cuBLAS,
//! % of the FP32 peak; every kernel's result checked against cuBLAS's first. Each kernel is
//! timed in alternation with cuBLAS (one run of each per repetition), and its % is of that
//! cuBLAS time, so the GPU's drift over the run reaches both alike.
//! Without a GPU: each kernel's static report.
//!
//! `cargo run --release --example sgemm -- [--shapes M,N,K;M,N,K..] [--reps N] [--only NAME,NAME..] [--naive-up-to N]`

use tessera::catalog::sgemm;
use tessera::cli::GemmShapes;
use tessera::{Gpu, KernelDefinition};

const DEFAULT_SHAPES: &str =
    "1024,1024,1024;2048,2048,2048;4096,4096,4096;8192,8192,8192;4095,4095,4095;4097,4097,4097;8192,8192,256";

/// The SGEMM family beside cuBLAS (FP32, pedantic math) in one run, every kernel's result
/// checked against cuBLAS's; without a GPU, each kernel's static report.
#[derive(clap::Parser)]
#[command(name = "sgemm", args_override_self = true)]
struct Options {
    /// Shapes M,N,K separated by `;`.
    #[arg(long, value_name = "M,N,K;M,N,K..", default_value = DEFAULT_SHAPES)]
    shapes: GemmShapes,
    /// Timed repetitions per kernel and shape (each beside one cuBLAS run).
    #[arg(long = "reps", value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: u32,
    /// Only these kernels, by name, separated by commas.
    #[arg(long, value_name = "NAME,NAME..")]
    only: Option<String>,
    /// The naive kernel is skipped above this extent (it takes seconds).
    #[arg(long, value_name = "N", default_value_t = 2048)]
    naive_up_to: usize,
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let kernels: Vec<&KernelDefinition> = sgemm::ALL
        .into_iter()
        .filter(|k| options.only.as_deref().is_none_or(|only| only.split(',').any(|o| k.name() == o.trim())))
        .collect();
    match Gpu::new(0) {
        Ok(gpu) => {
            if let Err(error) = run(&gpu, &kernels, &options) {
                eprintln!("error: {error}");
                std::process::exit(1);
            }
        }
        Err(reason) => {
            println!("No GPU here ({reason}); the static analysis of each kernel:\n");
            for kernel in kernels {
                match kernel.ir().ok().and_then(|ir| tessera::dsl::analyze(ir).ok()) {
                    Some(report) => println!("{report}"),
                    None => println!("{}: no report", kernel.name()),
                }
            }
        }
    }
}

fn run(gpu: &Gpu, kernels: &[&KernelDefinition], options: &Options) -> Result<(), tessera::Error> {
    let blas = gpu.cublas()?;
    let peak = gpu.fp32_peak_tflops();
    println!(
        "{} ({}, {} SMs), FP32 peak {}",
        gpu.name(),
        gpu.arch(),
        gpu.sm_count(),
        peak.map_or("unknown".into(), |p| format!("{p:.1} TFLOP/s"))
    );
    println!(
        "{:<22} {:<16} {:>9} {:>8} {:>9} {:>8} {:>10}",
        "M×N×K", "kernel", "median ms", "TFLOP/s", "of cuBLAS", "of peak", "rel. error"
    );
    for &(m, n, k) in &options.shapes.0 {
        let flops = 2.0 * m as f64 * n as f64 * k as f64;
        let seeded = |len: usize, seed: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * 7919 + seed * 104729) % 2003) as f32 / 1001.0 - 1.0).collect()
        };
        let a = gpu.upload(&seeded(m * k, 1), [m, k])?;
        let b = gpu.upload(&seeded(k * n, 2), [k, n])?;
        let mut c = gpu.zeros::<f32>([m, n])?;
        let mut reference = gpu.zeros::<f32>([m, n])?;
        let shape = format!("{m}×{n}×{k}");
        let baseline = gpu.time(2, options.repetitions as usize, || blas.sgemm(1.0, &a, &b, 0.0, &mut reference))?;
        let base_tflops = baseline.tflop_per_s(flops);
        let percent_of_peak = |t: f64| peak.map_or("-".into(), |p| format!("{:.1}%", 100.0 * t / p));
        println!(
            "{shape:<22} {:<16} {:>9.3} {:>8.1} {:>8.1}% {:>8} {:>10}",
            "cuBLAS",
            baseline.median_ms,
            base_tflops,
            100.0,
            percent_of_peak(base_tflops),
            "-"
        );
        let want = gpu.download(&reference)?;
        for kernel in kernels {
            if kernel.name() == "sgemm_naive" && m.max(n).max(k) > options.naive_up_to {
                continue;
            }
            let launch = |c: &mut tessera::DeviceTensor<f32>| sgemm::launch(kernel, gpu, &a, &b, c, 1.0, 0.0);
            let tuned = launch(&mut c)?.tuned;
            let got = gpu.download(&c)?;
            let (mut diff, mut norm) = (0.0f64, 0.0f64);
            for (g, w) in got.iter().zip(&want) {
                diff += (f64::from(*g) - f64::from(*w)).powi(2);
                norm += f64::from(*w).powi(2);
            }
            let error = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
            let (beside, timing) = gpu.time_paired(
                2,
                options.repetitions as usize,
                || Ok(()),
                || blas.sgemm(1.0, &a, &b, 0.0, &mut reference),
                || launch(&mut c).map(|_| ()),
            )?;
            let tflops = timing.tflop_per_s(flops);
            let base_tflops = beside.tflop_per_s(flops);
            println!(
                "{shape:<22} {:<16} {:>9.3} {:>8.1} {:>8.1}% {:>8} {:>10.1e}",
                if tuned { format!("{} (tuned)", kernel.name()) } else { kernel.name().to_string() },
                timing.median_ms,
                tflops,
                100.0 * tflops / base_tflops,
                percent_of_peak(tflops),
                error
            );
        }
    }
    Ok(())
}
