//! The transpose family on the GPU, beside the device-to-device copy of the same bytes, for
//! a divisible shape and a tail shape; without a GPU, each kernel's static report.
//!
//! `cargo run --release --example transpose -- [--size R,C] [--tail R,C] [--reps N] [--warmup N] [--only NAME]`

use tessera::catalog::transpose;
use tessera::{Argument, Gpu, KernelDefinition, Timing};

struct Options {
    size: (usize, usize),
    tail: Option<(usize, usize)>,
    repetitions: usize,
    warmup: usize,
    only: Option<String>,
}

fn parse_shape(text: &str) -> Result<(usize, usize), String> {
    let (r, c) = text.split_once([',', 'x']).ok_or(format!("`{text}`: expected R,C"))?;
    Ok((r.trim().parse().map_err(|e| format!("{text}: {e}"))?, c.trim().parse().map_err(|e| format!("{text}: {e}"))?))
}

fn options() -> Result<Options, String> {
    let mut options =
        Options { size: (16384, 16384), tail: Some((4095, 4097)), repetitions: 30, warmup: 3, only: None };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--size" => options.size = parse_shape(&value()?)?,
            "--tail" => {
                let text = value()?;
                options.tail = if text == "none" { None } else { Some(parse_shape(&text)?) };
            }
            "--reps" => options.repetitions = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--warmup" => options.warmup = value()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--only" => options.only = Some(value()?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(options)
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
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
    let baseline = gpu.time(options.warmup, options.repetitions, || gpu.copy(&x_flat, &mut flat))?;
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
        let timing: Timing = gpu.time(options.warmup, options.repetitions, || {
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
