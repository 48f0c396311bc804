//! The transpose family on the GPU, beside the device-to-device copy of the same bytes, for
//! a divisible shape and a tail shape; without a GPU, each kernel's static report.
//!
//! `cargo run --release --example transpose -- [--size R,C] [--tail R,C|none] [--reps N] [--warmup N] [--only NAME]`

use tessera::catalog::transpose;
use tessera::{Argument, Gpu, KernelDefinition, Timing};

/// The transpose family beside the device-to-device copy of the same bytes, at a divisible
/// shape and a tail shape; without a GPU, each kernel's static report.
#[derive(clap::Parser)]
#[command(name = "transpose", args_override_self = true)]
struct Options {
    /// The divisible shape, R,C (or RxC).
    #[arg(long, value_name = "R,C", default_value = "16384,16384", value_parser = parse_shape)]
    size: (usize, usize),
    /// The tail shape, R,C (or RxC), or `none` for no tail shape.
    // Spelled out so that clap's derive takes `None` as a parsed value (`--tail none`), not as
    // "option absent".
    #[arg(long, value_name = "R,C|none", default_value = "4095,4097", value_parser = parse_tail)]
    tail: std::option::Option<(usize, usize)>,
    /// Timed repetitions per kernel.
    #[arg(long = "reps", value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: u32,
    /// Untimed runs before them.
    #[arg(long, value_name = "N", default_value_t = 3)]
    warmup: u32,
    /// Only the kernel of this name.
    #[arg(long, value_name = "NAME")]
    only: Option<String>,
}

fn parse_shape(text: &str) -> Result<(usize, usize), String> {
    let (r, c) = text.split_once([',', 'x']).ok_or(format!("`{text}`: expected R,C"))?;
    Ok((r.trim().parse().map_err(|e| format!("{text}: {e}"))?, c.trim().parse().map_err(|e| format!("{text}: {e}"))?))
}

fn parse_tail(text: &str) -> Result<Option<(usize, usize)>, String> {
    if text == "none" {
        Ok(None)
    } else {
        parse_shape(text).map(Some)
    }
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let kernels: Vec<&KernelDefinition> =
        transpose::ALL.into_iter().filter(|k| options.only.as_deref().is_none_or(|o| k.name() == o)).collect();
    match Gpu::new(0) {
        Ok(gpu) => {
            let mut divisible = Vec::new();
            for (shape, label) in [(Some(options.size), "shape"), (options.tail, "tail shape")] {
                let Some(shape) = shape else { continue };
                match run(&gpu, &kernels, shape, &options, &divisible) {
                    Ok(results) if label == "shape" => divisible = results,
                    Ok(_) => {}
                    Err(error) => {
                        eprintln!("error: {error}");
                        std::process::exit(1);
                    }
                }
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

/// Times every kernel at `shape`; returns (name, GB/s) for comparing the tail shape.
fn run(
    gpu: &Gpu,
    kernels: &[&KernelDefinition],
    (rows, cols): (usize, usize),
    options: &Options,
    divisible: &[(&'static str, f64)],
) -> Result<Vec<(&'static str, f64)>, tessera::Error> {
    let len = rows * cols;
    let bytes = 2 * 4 * len as u64;
    println!(
        "\n{} ({}): x {rows}×{cols} f32 → y {cols}×{rows}, {:.2} GiB each way",
        gpu.name(),
        gpu.arch(),
        len as f64 * 4.0 / (1u64 << 30) as f64
    );
    let host: Vec<f32> = (0..len).map(|i| (i % 1_000_003) as f32 - 500_000.0).collect();
    let x = gpu.upload(&host, [rows, cols])?;
    let mut y = gpu.zeros::<f32>([cols, rows])?;
    let mut flat = gpu.zeros::<f32>([len])?;
    let x_flat = gpu.upload(&host, [len])?;
    let baseline = gpu.time(options.warmup as usize, options.repetitions as usize, || gpu.copy(&x_flat, &mut flat))?;
    drop(x_flat);
    drop(flat);
    let baseline_gbs = baseline.gb_per_s(bytes);
    let header = if divisible.is_empty() { "" } else { "  of divisible" };
    println!("{:<32} {:>5} {:>9} {:>8} {:>8}{header}", "kernel", "width", "median ms", "GB/s", "of copy");
    println!(
        "{:<32} {:>5} {:>9.3} {:>8.0} {:>7.1}%",
        "device copy (DtoD, same bytes)", "-", baseline.median_ms, baseline_gbs, 100.0
    );
    let mut results = Vec::new();
    for kernel in kernels {
        gpu.copy(&gpu.filled([cols, rows], f32::NAN)?, &mut y)?;
        let launched = kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)])?;
        let got = gpu.download(&y)?;
        // every element of a sample of rows and columns, edges included
        let wrong = (0..rows).step_by((rows / 97).max(1)).chain([rows - 1]).find_map(|r| {
            (0..cols).find(|&c| got[c * rows + r].to_bits() != host[r * cols + c].to_bits()).map(|c| (r, c))
        });
        if let Some((r, c)) = wrong {
            println!("{}: WRONG: y[{c}][{r}] = {} instead of {}", kernel.name(), got[c * rows + r], host[r * cols + c]);
            continue;
        }
        let timing: Timing = gpu.time(options.warmup as usize, options.repetitions as usize, || {
            kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).map(|_| ())
        })?;
        let gbs = timing.gb_per_s(bytes);
        let versus = divisible
            .iter()
            .find(|(name, _)| *name == kernel.name())
            .map(|(_, d)| format!("  {:>11.1}%", 100.0 * gbs / d))
            .unwrap_or_default();
        println!(
            "{:<32} {:>5} {:>9.3} {:>8.0} {:>7.1}%{versus}",
            kernel.name(),
            launched.vector,
            timing.median_ms,
            gbs,
            100.0 * gbs / baseline_gbs
        );
        results.push((kernel.name(), gbs));
    }
    Ok(results)
}
