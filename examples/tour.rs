//! The main job: a tour of the catalog. For every kernel, what tessera emitted (a summary of
//! the CUDA source) and what the static analysis says (its REPORT); then, on a GPU, every
//! kernel's speed beside its baseline measured in the same run (cuBLAS for SGEMM, the device
//! copy for the rest); without one, every kernel run on the CPU simulation of the same CUDA C
//! and checked against a CPU reference.
//!
//! `cargo run --release --example tour -- [--quick] [--sources]`

use tessera::bench::{self, BenchOptions};
use tessera::catalog::{copy, map, reduce, sgemm, stencil, transpose};
use tessera::{Argument, Backend, KernelDefinition, Simulator};

/// A tour of the catalog: every kernel's CUDA summary and static report, then every kernel
/// beside its baseline on a GPU, or on the CPU simulation against a CPU reference without one.
#[derive(clap::Parser)]
#[command(name = "tour", args_override_self = true)]
struct Options {
    /// Smaller shapes and fewer repetitions.
    #[arg(long)]
    quick: bool,
    /// Every kernel's full CUDA source.
    #[arg(long)]
    sources: bool,
}

fn main() {
    let Options { quick, sources } = <Options as clap::Parser>::parse();
    println!("tessera — a tour of the catalog\n");
    for (family, kernels) in [
        ("copy", copy::ALL.to_vec()),
        ("transpose", transpose::ALL.to_vec()),
        ("sgemm", sgemm::ALL.to_vec()),
        ("reduce", reduce::ALL.to_vec()),
        ("map", map::ALL.to_vec()),
        ("stencil", stencil::ALL.to_vec()),
    ] {
        println!("══ {family} ══════════════════════════════════════════════════════════════");
        for kernel in kernels {
            describe(kernel, sources);
        }
    }
    let backend = match Backend::detect() {
        Ok(backend) => backend,
        Err(error) => {
            println!("Neither a GPU nor a host C++ compiler for the simulation: {error}");
            return;
        }
    };
    println!("{backend}\n");
    let result = match &backend {
        Backend::Gpu(gpu) => measure(gpu, quick),
        Backend::Simulator(sim) => simulate(sim),
    };
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

/// The kernel's doc line, its CUDA in one paragraph, and its REPORT.
fn describe(kernel: &KernelDefinition, full_source: bool) {
    let Ok(ir) = kernel.ir() else { return };
    let source = kernel.cuda_source();
    let signature = source.lines().skip_while(|l| !l.starts_with("extern")).nth(1).unwrap_or_default();
    let count = |needle: &str| source.matches(needle).count();
    println!("── {} — {}", kernel.name(), ir.doc.as_deref().and_then(|d| d.lines().next()).unwrap_or("").trim());
    println!(
        "   CUDA: {} lines, {} shared buffer(s), {} barrier(s), {} vector loads; signature {}",
        source.lines().count(),
        count("__shared__"),
        count("__syncthreads()"),
        count("reinterpret_cast<const"),
        signature.trim()
    );
    if full_source {
        println!("{source}");
    }
    match tessera::dsl::analyze(ir) {
        Ok(report) => {
            for line in report.to_string().lines() {
                println!("   {line}");
            }
        }
        Err(error) => println!("   no report: {error}"),
    }
    println!();
}

/// Every kernel beside its baseline, in one run.
fn measure(gpu: &tessera::Gpu, quick: bool) -> Result<(), String> {
    let mut options = BenchOptions::default();
    options.repetitions = if quick { 5 } else { 20 };
    let shape = |pairs: &[(&str, i64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
    let (n, side, gemm) = if quick { (1 << 24, 4096, 2048) } else { (1 << 28, 16384, 4096) };
    options.sizes = Some(vec![
        shape(&[("N", n)]),
        shape(&[("R", side), ("C", side)]),
        shape(&[("M", gemm), ("N", gemm), ("K", gemm)]),
    ]);
    let bar = tessera::cli::ProgressLine::new();
    let rows = bench::run(gpu, &options, &mut |p| bar.step(p.done, p.of, p.step)).map_err(|e| e.to_string())?;
    bar.finish();
    print!("{}", bench::table(&rows));
    println!(
        "(`tessera bench` measures more shapes, with JSON, CSV and SVG charts; BENCHMARKS.md has the recorded runs.)"
    );
    Ok(())
}

/// Every kernel on the CPU simulation of its CUDA C, against a CPU reference.
fn simulate(sim: &Simulator) -> Result<(), String> {
    println!("No GPU here: every kernel runs on the CPU simulation of the very CUDA C above, under two");
    println!("thread orders (a race would show as a difference), and is checked against a CPU reference.");
    println!("Simulated times are not GPU times, so none are shown.\n");
    let err = |e: tessera::Error| e.to_string();
    let values = |len: usize, seed: usize| -> Vec<f32> {
        (0..len).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0).collect()
    };
    let n = 4099;
    let host = values(n, 1);
    let x = sim.upload(&host, [n]).map_err(err)?;
    for kernel in copy::ALL {
        let mut y = sim.filled([n], f32::NAN).map_err(err)?;
        kernel.launch(sim, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).map_err(err)?;
        let exact = sim.download(&y).map_err(err)? == host;
        println!(
            "  {:<32} y = x for {n} elements: {}",
            kernel.name(),
            if exact { "exact, SIMULATED" } else { "WRONG" }
        );
    }
    let (rows, cols) = (67, 131);
    let host = values(rows * cols, 2);
    let x = sim.upload(&host, [rows, cols]).map_err(err)?;
    for kernel in transpose::ALL {
        let mut y = sim.filled([cols, rows], f32::NAN).map_err(err)?;
        kernel.launch(sim, &mut [Argument::input("x", &x), Argument::output("y", &mut y)]).map_err(err)?;
        let got = sim.download(&y).map_err(err)?;
        let exact = (0..rows).all(|r| (0..cols).all(|c| got[c * rows + r] == host[r * cols + c]));
        println!(
            "  {:<32} y = xᵀ for {rows}×{cols}: {}",
            kernel.name(),
            if exact { "exact, SIMULATED" } else { "WRONG" }
        );
    }
    let (m, nn, k) = (67, 45, 33);
    let (ha, hb) = (values(m * k, 3), values(k * nn, 4));
    let a = sim.upload(&ha, [m, k]).map_err(err)?;
    let b = sim.upload(&hb, [k, nn]).map_err(err)?;
    for kernel in sgemm::ALL {
        let mut c = sim.filled([m, nn], f32::NAN).map_err(err)?;
        sgemm::launch(kernel, sim, &a, &b, &mut c, 1.0, 0.0).map_err(err)?;
        let got = sim.download(&c).map_err(err)?;
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for i in 0..m {
            for j in 0..nn {
                let want: f64 = (0..k).map(|p| f64::from(ha[i * k + p]) * f64::from(hb[p * nn + j])).sum();
                diff += (f64::from(got[i * nn + j]) - want).powi(2);
                norm += want * want;
            }
        }
        let error = (diff / norm).sqrt();
        println!(
            "  {:<32} C = A·B for {m}×{nn}×{k}: relative error {error:.1e} {}",
            kernel.name(),
            if error < 1e-5 { "(< 1e-5), SIMULATED" } else { "— WRONG" }
        );
    }
    // The reductions: two passes, block partials then one block's sum of them.
    let n = 65537;
    let (hx, hy) = (values(n, 5), values(n, 6));
    let x = sim.upload(&hx, [n]).map_err(err)?;
    let y = sim.upload(&hy, [n]).map_err(err)?;
    let mut partials = sim.zeros::<f32>([reduce::PARTIALS]).map_err(err)?;
    let mut total = sim.zeros::<f32>([1]).map_err(err)?;
    let terms = [
        ("sum_partials_f32", hx.iter().map(|v| f64::from(*v)).collect::<Vec<_>>()),
        ("dot_partials_f32", hx.iter().zip(&hy).map(|(a, b)| f64::from(*a) * f64::from(*b)).collect()),
    ];
    for (name, terms) in terms {
        let want: f64 = terms.iter().sum();
        // relative to Σ|term|: the scale of the rounding errors of any summation order
        let scale: f64 = terms.iter().map(|t| t.abs()).sum::<f64>().max(f64::MIN_POSITIVE);
        if name == "sum_partials_f32" {
            reduce::sum_partials_f32::launch(sim, &x, &mut partials).map_err(err)?;
        } else {
            reduce::dot_partials_f32::launch(sim, &x, &y, &mut partials).map_err(err)?;
        }
        reduce::sum_finish_f32::launch(sim, &partials, &mut total).map_err(err)?;
        let got = f64::from(sim.download(&total).map_err(err)?[0]);
        let error = (got - want).abs() / scale;
        println!(
            "  {:<32} {n} elements + sum_finish_f32: error {error:.1e} of Σ|term| {}",
            name,
            if error < 1e-5 { "(< 1e-5), SIMULATED" } else { "— WRONG" }
        );
    }
    let mut out = sim.upload(&hy, [n]).map_err(err)?;
    map::saxpy::launch(sim, 2.0, &x, &mut out).map_err(err)?;
    let exact = sim.download(&out).map_err(err)?.iter().zip(hx.iter().zip(&hy)).all(|(g, (a, b))| *g == 2.0 * a + b);
    println!("  {:<32} y = 2·x + y for {n} elements: {}", "saxpy", if exact { "exact, SIMULATED" } else { "WRONG" });
    let mut out = sim.filled([n], f32::NAN).map_err(err)?;
    map::gelu_tanh::launch(sim, &x, &mut out).map_err(err)?;
    let worst = sim.download(&out).map_err(err)?.iter().zip(&hx).fold(0.0f64, |worst, (g, v)| {
        let v = f64::from(*v);
        let want = 0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh());
        worst.max((f64::from(*g) - want).abs())
    });
    println!(
        "  {:<32} y = GELU(x) for {n} elements: largest error {worst:.1e} {}",
        "gelu_tanh",
        if worst < 1e-6 { "(< 1e-6), SIMULATED" } else { "— WRONG" }
    );
    // The stencils: the Laplacian through a halo tile, then Poisson by red-black Gauss-Seidel.
    let (rows, cols) = (67, 131);
    let host = values(rows * cols, 7);
    let u = sim.upload(&host, [rows, cols]).map_err(err)?;
    let mut out = sim.filled([rows, cols], f32::NAN).map_err(err)?;
    stencil::laplacian_5pt::launch(sim, &u, &mut out).map_err(err)?;
    let got = sim.download(&out).map_err(err)?;
    let at = |r: usize, c: usize| f64::from(host[r * cols + c]);
    let worst = (0..rows * cols).fold(0.0f64, |worst, i| {
        let (r, c) = (i / cols, i % cols);
        let want = if r == 0 || c == 0 || r == rows - 1 || c == cols - 1 {
            at(r, c)
        } else {
            at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1) - 4.0 * at(r, c)
        };
        worst.max((f64::from(got[i]) - want).abs())
    });
    println!(
        "  {:<32} Δu for {rows}×{cols} (edges copied): largest error {worst:.1e} {}",
        "laplacian_5pt",
        if worst < 1e-5 { "(< 1e-5), SIMULATED" } else { "— WRONG" }
    );
    let side = 17;
    let h = 1.0 / (side - 1) as f64;
    let pi = std::f64::consts::PI;
    let exact = |i: usize| (pi * (i / side) as f64 * h).sin() * (pi * (i % side) as f64 * h).sin();
    let f: Vec<f32> = (0..side * side).map(|i| (2.0 * pi * pi * exact(i)) as f32).collect();
    let backend = Backend::Simulator(sim.clone());
    let solution = stencil::solve_poisson(&backend, &f, side, side, (h * h) as f32, 1e-5, 5000).map_err(err)?;
    let worst = (0..side * side).fold(0.0f64, |worst, i| worst.max((f64::from(solution.u[i]) - exact(i)).abs()));
    // the 5-point scheme's own error on sin(πx)·sin(πy) is about π²h²/12 = 3.2e-3 at h = 1/16
    println!(
        "  {:<32} −Δu = 2π²·sin(πx)·sin(πy) on {side}×{side}: {} sweeps to relative residual {:.1e}, \
         largest error against sin(πx)·sin(πy) {worst:.1e} {}",
        "gauss_seidel_red_black",
        solution.sweeps,
        solution.relative_residual,
        if solution.relative_residual <= 1e-5 && worst < 5e-3 { "(< 5e-3), SIMULATED" } else { "— WRONG" }
    );
    Ok(())
}
