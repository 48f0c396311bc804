//! The main job: the vectorized-copy family of seeds/003, end to end.
//!
//! On a GPU: checks every kernel's output, then times each beside the device-to-device copy
//! in the same run and prints GB/s. Without one: says so, and still prints the emitted CUDA
//! and what NVRTC makes of it for sm_90.
//!
//! `cargo run --release --example copy -- [--len N] [--reps R] [--sources]`

use tessera::catalog::copy;
use tessera::{Arch, Argument, Gpu, KernelDefinition, Timing};

struct Options {
    len: usize,
    repetitions: usize,
    all_sources: bool,
}

fn options() -> Result<Options, String> {
    let mut options = Options { len: (1 << 28) + 3, repetitions: 30, all_sources: false };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next().ok_or(format!("{name} needs a value"))?.parse::<usize>().map_err(|e| format!("{name}: {e}"))
        };
        match arg.as_str() {
            "--len" => options.len = value("--len")?,
            "--reps" => options.repetitions = value("--reps")?.max(1),
            "--sources" => options.all_sources = true,
            other => return Err(format!("unknown argument `{other}`; expected --len N, --reps R, --sources")),
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
    println!("tessera: the vectorized copy family (y = x, f32)\n");
    let shown: Vec<&KernelDefinition> =
        if options.all_sources { copy::ALL.to_vec() } else { vec![&copy::copy_f32x4::KERNEL] };
    for kernel in &shown {
        println!("── emitted CUDA of `{}` ──\n{}", kernel.name(), kernel.cuda_source());
    }
    match Gpu::new(0) {
        Ok(gpu) => {
            if let Err(error) = run_on_gpu(&gpu, &options) {
                eprintln!("error: {error}");
                std::process::exit(1);
            }
        }
        Err(reason) => {
            println!("No GPU here ({reason}).\nNothing runs; this is what NVRTC makes of each kernel for sm_90:\n");
            if let Err(error) = report_compiles(Arch::SM_90) {
                println!("{error}");
            }
        }
    }
}

fn report_compiles(arch: Arch) -> Result<(), tessera::Error> {
    let (major, minor) = tessera::nvrtc::version()?;
    println!("NVRTC {major}.{minor}, {arch}");
    println!("{:<26} {:>6} {:>5} {:>7} {:>8}", "kernel", "width", "regs", "spills", "stack B");
    for kernel in copy::ALL {
        let compiled = kernel.compile_for(arch)?;
        let p = compiled.ptxas;
        println!(
            "{:<26} {:>6} {:>5} {:>7} {:>8}",
            kernel.name(),
            kernel.ir()?.config.vector,
            p.registers,
            p.spill_stores + p.spill_loads,
            p.stack_frame_bytes
        );
    }
    Ok(())
}

fn run_on_gpu(gpu: &Gpu, options: &Options) -> Result<(), tessera::Error> {
    let len = options.len;
    let bytes = 2 * 4 * len as u64; // read + written
    println!(
        "GPU: {} ({}, {} SMs); {} f32 = {:.2} GiB each way\n",
        gpu.name(),
        gpu.arch(),
        gpu.sm_count(),
        len,
        len as f64 * 4.0 / (1u64 << 30) as f64
    );
    let host: Vec<f32> = (0..len).map(|i| (i % 1_000_003) as f32 * 0.5 - 17.0).collect();
    let x = gpu.upload(&host, [len])?;
    let mut y = gpu.zeros::<f32>([len])?;
    let (warmup, repetitions) = (3, options.repetitions);

    let baseline = gpu.time(warmup, repetitions, || gpu.copy(&x, &mut y))?;
    let baseline_gbs = baseline.gb_per_s(bytes);
    println!(
        "{:<26} {:>5} {:>5} {:>7} {:>9} {:>9} {:>8}",
        "kernel", "width", "regs", "spills", "median ms", "GB/s", "of copy"
    );
    println!(
        "{:<26} {:>5} {:>5} {:>7} {:>9.3} {:>9.0} {:>7.1}%",
        "device copy (DtoD)", "-", "-", "-", baseline.median_ms, baseline_gbs, 100.0
    );
    for kernel in copy::ALL {
        gpu.copy(&gpu.filled([len], -1.0f32)?, &mut y)?;
        let launched = kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)])?;
        let got = gpu.download(&y)?;
        if let Some(i) = got.iter().zip(&host).position(|(g, h)| g.to_bits() != h.to_bits()) {
            println!("{}: WRONG at element {i}: {} instead of {}", kernel.name(), got[i], host[i]);
            continue;
        }
        let timing: Timing = gpu.time(warmup, repetitions, || {
            kernel.launch(gpu, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).map(|_| ())
        })?;
        let compiled = kernel.compile_for(gpu.arch())?;
        println!(
            "{:<26} {:>5} {:>5} {:>7} {:>9.3} {:>9.0} {:>7.1}%",
            kernel.name(),
            launched.vector,
            launched.registers,
            compiled.ptxas.spill_stores + compiled.ptxas.spill_loads,
            timing.median_ms,
            timing.gb_per_s(bytes),
            100.0 * timing.gb_per_s(bytes) / baseline_gbs
        );
    }
    println!(
        "\nGB/s counts bytes read plus written; medians of {repetitions} runs after {warmup} warm-ups, CUDA events."
    );
    Ok(())
}
