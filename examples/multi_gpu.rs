//! Tensor-parallel GEMMs over 1, 2, 4, 8 GPUs (as many as the machine has) in one run: the
//! row-parallel layout (A and C split by rows, B on every GPU, nothing moves) and the K-split
//! layout (A by columns, B by rows, partial C reduce-scattered through NCCL), the latter
//! without overlap (one chunk) and with it (the reduce-scatter of one slice of rows runs while
//! the GPUs compute the next). Reports ms, TFLOP/s, speed-up over one GPU and % of linear;
//! then NCCL all-reduce bus bandwidth through the group. Without GPUs it runs the same code on
//! three simulated devices at a small shape and checks the numbers.
//!
//! `cargo run --release --example multi_gpu -- [--gpus N] [--shapes M,N,K;..] [--chunks C,..]
//!  [--reps R] [--f32-kernel NAME] [--bf16-kernel NAME] [--bf16-out-kernel NAME]
//!  [--types f32,bf16,bf16-out] [--all-reduce-mib S,S..]
//!  [--normal-priority]` (`--help` explains each)

use std::time::Instant;

use tessera::catalog::{parallel, sgemm};
use tessera::cli::GemmShapes;
use tessera::half::bf16;
use tessera::runtime::{
    CommunicationOptions, CommunicationPriority, DeviceGroup, Element, ReduceOp, Reducible, Sharding,
};
use tessera::{Error, KernelDefinition};

/// Tensor-parallel GEMMs over 1, 2, 4, 8 GPUs (as many as the machine has), then NCCL
/// collectives' bus bandwidth; without GPUs, the same code on three simulated devices.
///
/// Every shape runs in the row-parallel layout (A and C split by rows, B on every GPU, nothing
/// moves) and the K-split layout (A by columns, B by rows, partial C reduce-scattered through
/// NCCL), the latter without overlap (one chunk) and with it (the reduce-scatter of one slice of
/// rows runs while the GPUs compute the next). Reports ms, TFLOP/s, speed-up over one GPU and %
/// of linear; then, with two GPUs or more, all-reduce and reduce-scatter bus bandwidth through
/// the group. Without GPUs it runs the row-parallel and K-split GEMMs on three simulated devices
/// at a small shape and checks the numbers.
#[derive(clap::Parser)]
#[command(name = "multi_gpu", args_override_self = true)]
struct Options {
    /// At most this many GPUs (default: all); groups of 1, 2, 4 and 8 up to it are measured.
    #[arg(long, value_name = "N")]
    gpus: Option<usize>,
    /// Shapes M,N,K separated by `;`.
    #[arg(long, value_name = "M,N,K;..", default_value = "16384,16384,16384;32768,32768,8192")]
    shapes: GemmShapes,
    /// Chunk counts of the overlapped K-split (each slice of rows reduce-scattered while the
    /// GPUs compute the next), separated by commas.
    #[arg(long, value_name = "C,..", value_delimiter = ',', default_value = "2,4,8", value_parser = trimmed::<usize>)]
    chunks: Vec<usize>,
    /// Timed repetitions of each GEMM.
    #[arg(long = "reps", value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: u32,
    /// The f32 kernel of each shard. One whose blocks retire (V11) lets NCCL's kernels run
    /// beside it; a persistent one (V13, faster alone) holds every SM, and the overlapped
    /// K split loses to the one without overlap.
    #[arg(long, value_name = "NAME", default_value = "sgemm_v11")]
    f32_kernel: String,
    /// The bf16 kernel of each shard (bf16 inputs, f32 output).
    #[arg(long, value_name = "NAME", default_value = "hgemm_v6_bf16")]
    bf16_kernel: String,
    /// The kernel of `bf16-out` (bf16 inputs and output: the K split's partial C is bf16, half
    /// the bytes to reduce-scatter, summed by NCCL in bf16 as a tensor-parallel layer does).
    #[arg(long, value_name = "NAME", default_value = "hgemm_v11_bf16_to_bf16")]
    bf16_out_kernel: String,
    /// Element types to run, separated by commas: f32, bf16 (f32 C), bf16-out (bf16 C).
    #[arg(long, value_name = "f32,bf16,bf16-out", value_delimiter = ',', default_value = "f32,bf16")]
    #[arg(value_parser = element_type)]
    types: Vec<String>,
    /// Sizes of the collectives' tensors in MiB, separated by commas.
    #[arg(long, value_name = "S,S..", value_delimiter = ',', default_value = "64,256,1024")]
    #[arg(value_parser = trimmed::<usize>)]
    all_reduce_mib: Vec<usize>,
    /// Run NCCL's kernels at the compute streams' priority instead of the highest.
    #[arg(long)]
    normal_priority: bool,
    /// At most this many blocks for each NCCL collective's kernel (NCCL's `maxCTAs`), so an
    /// overlapped collective leaves SMs to the GEMM; NCCL chooses without it.
    #[arg(long, value_name = "BLOCKS", value_parser = clap::value_parser!(u32).range(1..))]
    collective_blocks: Option<u32>,
}

impl Options {
    fn communication(&self) -> CommunicationOptions {
        let priority = if self.normal_priority { CommunicationPriority::Normal } else { CommunicationPriority::High };
        CommunicationOptions { priority, max_blocks: self.collective_blocks }
    }
}

/// A list item, spaces around it ignored.
fn trimmed<T: std::str::FromStr<Err: std::fmt::Display>>(text: &str) -> Result<T, String> {
    text.trim().parse().map_err(|e| format!("`{text}`: {e}"))
}

fn element_type(text: &str) -> Result<String, String> {
    match text.trim() {
        t @ ("f32" | "bf16" | "bf16-out") => Ok(t.to_string()),
        other => Err(format!("`{other}` is not f32, bf16 or bf16-out")),
    }
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let result = match DeviceGroup::all_gpus() {
        Ok(all) => run_on_gpus(all.len(), &options),
        Err(reason) => {
            println!("No GPU group here ({reason}); the same code on three simulated devices:\n");
            simulated_demo().map_err(Into::into)
        }
    };
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

/// One measured configuration.
struct Row {
    element: &'static str,
    shape: (usize, usize, usize),
    gpus: usize,
    layout: String,
    ms: f64,
}

fn run_on_gpus(available: usize, options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let most = options.gpus.unwrap_or(available).min(available);
    let sizes: Vec<usize> = [1, 2, 4, 8].into_iter().filter(|&g| g <= most).collect();
    let f32_kernel = find(&options.f32_kernel)?;
    let bf16_kernel = find(&options.bf16_kernel)?;
    let bf16_out_kernel = find(&options.bf16_out_kernel)?;
    let mut rows = Vec::new();
    for &(m, n, k) in &options.shapes.0 {
        let a = random(m * k, 1);
        let b = random(k * n, 2);
        for element in &options.types {
            for &gpus in &sizes {
                let group = DeviceGroup::gpus_with(&(0..gpus).collect::<Vec<_>>(), options.communication())?;
                eprintln!("{element} {m}×{n}×{k} on {group}");
                let narrow = |x: &[f32]| x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<bf16>>();
                let (measured, element) = match element.as_str() {
                    "bf16" => {
                        (measure::<_, f32>(&group, bf16_kernel, &narrow(&a), &narrow(&b), (m, n, k), options)?, "bf16")
                    }
                    "bf16-out" => (
                        measure::<_, bf16>(&group, bf16_out_kernel, &narrow(&a), &narrow(&b), (m, n, k), options)?,
                        "bf16 → bf16",
                    ),
                    _ => (measure::<_, f32>(&group, f32_kernel, &a, &b, (m, n, k), options)?, "f32"),
                };
                rows.extend(measured.into_iter().map(|(layout, ms)| Row {
                    element,
                    shape: (m, n, k),
                    gpus,
                    layout,
                    ms,
                }));
            }
        }
    }
    print_gemm_table(&rows, [f32_kernel.name(), bf16_kernel.name(), bf16_out_kernel.name()]);
    if most >= 2 {
        print_all_reduce(most, options)?;
    }
    Ok(())
}

/// The three layouts on `group`, C (and the K split's partial C) of `TOut`: (name, median ms).
fn measure<T: Element, TOut: Reducible>(
    group: &DeviceGroup,
    kernel: &KernelDefinition,
    a: &[T],
    b: &[T],
    (m, n, k): (usize, usize, usize),
    options: &Options,
) -> Result<Vec<(String, f64)>, Error> {
    let reps = options.repetitions as usize;
    let mut measured = Vec::new();
    {
        let a_rows = group.shard(a, [m, k], Sharding::Rows)?;
        let b_all = group.shard(b, [k, n], Sharding::Replicated)?;
        let mut c = group.sharded_zeros::<TOut>([m, n], Sharding::Rows)?;
        let timing = group.time(1, reps, || parallel::gemm_rows(group, kernel, &a_rows, &b_all, &mut c, 1.0, 0.0))?;
        measured.push(("rows (no transfer)".to_string(), timing.median_ms));
    }
    if group.len() > 1 {
        let a_columns = group.shard(a, [m, k], Sharding::Columns)?;
        let b_rows = group.shard(b, [k, n], Sharding::Rows)?;
        let mut c = group.sharded_zeros::<TOut>([m, n], Sharding::Rows)?;
        for chunks in std::iter::once(1).chain(options.chunks.iter().map(|&c| c.max(1))) {
            let mut gemm = parallel::KSplitGemm::<TOut>::new(group, [m, n], chunks)?;
            let timing = group.time(1, reps, || gemm.run(group, kernel, &a_columns, &b_rows, &mut c, 1.0))?;
            let name = if chunks == 1 {
                "K split, reduce-scatter after".to_string()
            } else {
                format!("K split, {chunks} chunks overlapped")
            };
            measured.push((name, timing.median_ms));
        }
    }
    Ok(measured)
}

fn print_gemm_table(rows: &[Row], [f32_kernel, bf16_kernel, bf16_out_kernel]: [&str; 3]) {
    println!("\nTensor-parallel GEMM ({f32_kernel} for f32, {bf16_kernel} for bf16 inputs with f32 output, {bf16_out_kernel} for bf16 → bf16), median of the group's longest GPU span:\n");
    println!("| type | M×N×K | GPUs | layout | ms | TFLOP/s | speed-up over 1 GPU | % of linear |");
    println!("|---|---|---:|---|---:|---:|---:|---:|");
    for row in rows {
        let (m, n, k) = row.shape;
        let single = rows
            .iter()
            .find(|r| r.element == row.element && r.shape == row.shape && r.gpus == 1)
            .map_or(f64::NAN, |r| r.ms);
        let speedup = single / row.ms;
        let tflops = 2.0 * m as f64 * n as f64 * k as f64 / (row.ms * 1e-3) / 1e12;
        println!(
            "| {} | {m}×{n}×{k} | {} | {} | {:.2} | {tflops:.1} | {speedup:.2}× | {:.1}% |",
            row.element,
            row.gpus,
            row.layout,
            row.ms,
            100.0 * speedup / row.gpus as f64
        );
    }
}

/// All-reduce and reduce-scatter of f32 tensors through the group: algorithm bandwidth
/// (input bytes / time) and bus bandwidth (× 2(n − 1)/n and × (n − 1)/n, as nccl-tests
/// reports them). The reduce-scatter goes once as one NCCL call and once in two row chunks
/// (what the overlapped K-split GEMM issues: one reduce per rank, grouped).
fn print_all_reduce(gpus: usize, options: &Options) -> Result<(), Error> {
    let group = DeviceGroup::gpus_with(&(0..gpus).collect::<Vec<_>>(), options.communication())?;
    let n = gpus as f64;
    println!("\nCollectives (sum, f32) over {group}:\n");
    println!("| collective | MiB | ms | algorithm GB/s | bus GB/s |");
    println!("|---|---:|---:|---:|---:|");
    for &mib in &options.all_reduce_mib {
        let len = mib * (1 << 20) / 4;
        let bytes = (len * 4) as f64;
        let row = |name: &str, ms: f64, factor: f64| {
            let algorithm = bytes / (ms * 1e-3) / 1e9;
            println!("| tessera {name} | {mib} | {ms:.3} | {algorithm:.1} | {:.1} |", algorithm * factor);
        };
        let mut x = group.sharded_zeros::<f32>([len], Sharding::Replicated)?;
        let timing = group.time(3, 20, || group.all_reduce(&mut x, ReduceOp::Sum)?.wait())?;
        row("all-reduce", timing.median_ms, 2.0 * (n - 1.0) / n);
        let mut out = group.sharded_zeros::<f32>([len], Sharding::Rows)?;
        let timing = group.time(3, 20, || group.reduce_scatter(&x, &mut out, ReduceOp::Sum)?.wait())?;
        row("reduce-scatter", timing.median_ms, (n - 1.0) / n);
        let shard_rows = out.range(0).len();
        let half = shard_rows.div_ceil(2);
        let timing = group.time(3, 20, || {
            let first = group.reduce_scatter_rows(&x, &mut out, 0..half, ReduceOp::Sum)?;
            let second = group.reduce_scatter_rows(&x, &mut out, half..shard_rows, ReduceOp::Sum)?;
            first.wait()?;
            second.wait()
        })?;
        row("reduce-scatter in 2 row chunks", timing.median_ms, (n - 1.0) / n);
    }
    Ok(())
}

/// The row-parallel and K-split GEMMs on three simulated devices, checked against the host.
fn simulated_demo() -> Result<(), Error> {
    let group = DeviceGroup::simulated(3)?;
    let (m, n, k) = (20, 12, 30);
    let (a, b) = (random(m * k, 1), random(k * n, 2));
    let mut want = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
        }
    }
    let kernel = &sgemm::sgemm_v1::KERNEL;
    let started = Instant::now();
    let a_rows = group.shard(&a, [m, k], Sharding::Rows)?;
    let b_all = group.shard(&b, [k, n], Sharding::Replicated)?;
    let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows)?;
    parallel::gemm_rows(&group, kernel, &a_rows, &b_all, &mut c, 1.0, 0.0)?;
    report("rows", &group.gather(&c)?, &want);
    let a_columns = group.shard(&a, [m, k], Sharding::Columns)?;
    let b_rows = group.shard(&b, [k, n], Sharding::Rows)?;
    let mut c = group.sharded_zeros::<f32>([m, n], Sharding::Rows)?;
    parallel::KSplitGemm::<f32>::new(&group, [m, n], 2)?.run(&group, kernel, &a_columns, &b_rows, &mut c, 1.0)?;
    report("K split, 2 chunks", &group.gather(&c)?, &want);
    for record in group.take_collective_log() {
        println!(
            "  collective: {:?} rows per rank {:?} (one NCCL call: {})",
            record.collective, record.rows, record.native
        );
    }
    println!("({:.1} s simulated)", started.elapsed().as_secs_f64());
    Ok(())
}

fn report(layout: &str, got: &[f32], want: &[f64]) {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (f64::from(*g) - w).powi(2);
        norm += w.powi(2);
    }
    println!("{layout}: relative error against f64 {:.2e}", (diff / norm).sqrt());
}

fn find(name: &str) -> Result<&'static KernelDefinition, Box<dyn std::error::Error>> {
    tessera::catalog::find(name).ok_or_else(|| format!("no catalog kernel is named `{name}`").into())
}

/// Uniform values in [-1, 1), xorshift.
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}
