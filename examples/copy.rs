//! The main job: the vectorized-copy family of seeds/003, end to end.
//!
//! On a GPU: checks every kernel's output, then times each beside the device-to-device copy
//! in the same run and prints GB/s. Without one: says so, runs the very same emitted CUDA C on
//! the CPU simulation (checked element by element against a CPU reference, under two thread
//! orders), and prints what NVRTC makes of each kernel for sm_90.
//!
//! `cargo run --release --example copy -- [--len N] [--reps R] [--sources]`
//! (`TESSERA_BACKEND=simulator` simulates even on a GPU machine.)

use tessera::catalog::copy;
use tessera::{Arch, Argument, Backend, Gpu, KernelDefinition, Simulator, Timing};

/// The default length on a GPU: 1 GiB each way, enough to measure bandwidth.
const GPU_LEN: usize = (1 << 28) + 3;
/// The default length simulated: the simulation runs every thread on the CPU, so smaller,
/// and still with a partial last tile.
const SIMULATED_LEN: usize = (1 << 20) + 3;

/// The vectorized-copy family of seeds/003 end to end: every kernel's output checked, each
/// timed beside the device-to-device copy on a GPU, or run on the CPU simulation without one.
#[derive(clap::Parser)]
#[command(name = "copy", args_override_self = true)]
struct Options {
    /// Elements to copy (default: 2^28 + 3 on a GPU, 2^20 + 3 simulated).
    #[arg(long, value_name = "N")]
    len: Option<usize>,
    /// Timed repetitions per kernel.
    #[arg(long = "reps", value_name = "R", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: u32,
    /// Print every kernel's CUDA source, not only copy_f32x4's.
    #[arg(long = "sources")]
    all_sources: bool,
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    println!("tessera: the vectorized copy family (y = x, f32)\n");
    let shown: Vec<&KernelDefinition> =
        if options.all_sources { copy::ALL.to_vec() } else { vec![&copy::copy_f32x4::KERNEL] };
    for kernel in &shown {
        println!("── emitted CUDA of `{}` ──\n{}", kernel.name(), kernel.cuda_source());
    }
    match Backend::detect() {
        Ok(Backend::Gpu(gpu)) => {
            if let Err(error) = run_on_gpu(&gpu, &options) {
                eprintln!("error: {error}");
                std::process::exit(1);
            }
        }
        Ok(Backend::Simulator(sim)) => {
            let reason = sim.no_gpu_reason().unwrap_or("none asked for").to_string();
            println!("No GPU here ({reason}).\n");
            let simulated = run_simulated(&sim, &options);
            println!("\nWhat NVRTC makes of each kernel for sm_90 (no GPU needed):\n");
            if let Err(error) = report_compiles(Arch::SM_90) {
                println!("{error}");
            }
            if let Err(error) = simulated {
                eprintln!("error: {error}");
                std::process::exit(1);
            }
        }
        Err(reason) => {
            println!("Nothing can run here: {reason}.\nThis is what NVRTC makes of each kernel for sm_90:\n");
            if let Err(error) = report_compiles(Arch::SM_90) {
                println!("{error}");
            }
        }
    }
}

/// Every kernel on the CPU simulation: the exact emitted C, every thread, under the
/// simulator's thread orders (a race would be an error), checked against a CPU reference.
fn run_simulated(sim: &Simulator, options: &Options) -> Result<(), tessera::Error> {
    let len = options.len.unwrap_or(SIMULATED_LEN);
    let orders: Vec<String> = sim.orders().iter().map(ToString::to_string).collect();
    println!("SIMULATED: the emitted CUDA C runs on the CPU, every thread of every block.");
    println!(
        "Compiled by {} ({}); each launch runs under thread orders {}\n\
         (outputs that differ would be reported as a race). {len} f32; each output is compared\n\
         bit for bit with the CPU's y = x.\n",
        sim.compiler().command(),
        sim.compiler().version(),
        orders.join(" and "),
    );
    let host: Vec<f32> = (0..len).map(|i| (i % 1_000_003) as f32 * 0.5 - 17.0).collect();
    let reference = host.clone(); // the CPU's copy
    let x = sim.upload(&host, [len])?;
    let mut y = sim.zeros::<f32>([len])?;
    println!(
        "{:<26} {:>5} {:>7} {:>9} {:>13}  SIMULATED result",
        "kernel", "width", "blocks", "threads", "CPU ms (sim)"
    );
    let mut wrong = 0;
    for kernel in copy::ALL {
        sim.copy(&sim.filled([len], -1.0f32)?, &mut y)?;
        let mut launched = None;
        let timing = sim.time(0, 1, || {
            launched = Some(kernel.launch(sim, &mut [Argument::input("x", &x), Argument::output("y", &mut y)])?);
            Ok(())
        })?;
        let Some(launched) = launched else { continue };
        let got = sim.download(&y)?;
        let verdict = match got.iter().zip(&reference).position(|(g, h)| g.to_bits() != h.to_bits()) {
            None => format!("exact ({len} elements)"),
            Some(i) => {
                wrong += 1;
                format!("WRONG at element {i}: {} instead of {}", got[i], reference[i])
            }
        };
        println!(
            "{:<26} {:>5} {:>7} {:>9} {:>13.1}  {verdict}",
            kernel.name(),
            launched.vector,
            launched.grid[0],
            launched.grid[0] as u64 * launched.block[0] as u64,
            timing.median_ms,
        );
    }
    println!(
        "\nThese are the kernels' real outputs, computed on the CPU by the emitted CUDA C; the times\n\
         are the simulation's, not a GPU's. Grid-stride kernels get {} blocks here.",
        sim.resident_blocks()
    );
    if wrong > 0 {
        println!("{wrong} kernel(s) gave wrong output.");
        std::process::exit(1);
    }
    Ok(())
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
    let len = options.len.unwrap_or(GPU_LEN);
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
    let (warmup, repetitions) = (3, options.repetitions as usize);

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
