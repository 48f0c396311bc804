//! `tessera`: inspect the catalog's kernels.
//!
//! ```text
//! tessera list
//! tessera show <kernel> [--config BM=64,BK=16,threads=128] [--vector 1|2|4] [--arch sm_90] [--ptx | --sass | --log | --report]
//! tessera check <kernel> [--arch sm_80|sm_86|sm_89|sm_90] [--shape M=4096,N=4096,K=4096] [--gpu H200] [--no-nvrtc] [--json]
//! ```
//! `show` prints the CUDA source (at another vector width with `--vector`), the PTX NVRTC
//! makes of it (`--ptx`), or the NVRTC/ptxas log of the cubin compile (`--log`).
//! `check` prints what the configuration costs: resources, occupancy, roofline, accesses
//! (`tessera check --help` documents it and its JSON).

use std::process::ExitCode;

use tessera::dsl::VectorWidth;
use tessera::{catalog, nvrtc, Arch};

enum Output {
    Source,
    Ptx,
    Sass,
    Log,
    Report,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tessera: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("list") => {
            for kernel in catalog::all() {
                let config = &kernel.ir().map_err(|e| e.to_string())?.config;
                println!("{:<26} {}", kernel.name(), tessera::codegen::attribute_text(config));
            }
            Ok(())
        }
        Some("show") => show(&args[1..]),
        Some("tune") => tune(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("check") => check(&args[1..]),
        _ => Err(USAGE.into()),
    }
}

const USAGE: &str = "usage: tessera list\n       tessera show <kernel> [--config BM=64,..] [--vector 1|2|4] [--arch sm_XY] [--ptx | --sass | --log | --report]\n       tessera check <kernel> [--arch sm_XY] [--shape M=4096,N=4096,K=4096] [--gpu NAME] [--no-nvrtc] [--json] (--help: more)\n       tessera tune <kernel> --shape M=4096,N=4096,K=4096 [--scalar alpha=1] [--rounds 2] [--dry-run]\n       tessera bench [copy|transpose|sgemm|reduce|map|stencil ..] [--sizes ..] [--reps N] [--no-flush] [--json | --csv] [--svg DIR]";

fn bench(args: &[String]) -> Result<(), String> {
    use tessera::bench::{self, BenchOptions, Output};
    let options = BenchOptions::parse(args)?;
    let gpu = tessera::Gpu::new(0).map_err(|e| format!("bench measures on a GPU: {e}"))?;
    eprintln!(
        "{} ({}), L2 {} flushed before every repetition",
        gpu.name(),
        gpu.arch(),
        if options.flush_l2 { "cache" } else { "not" }
    );
    let rows = bench::run(&gpu, &options, &mut |step| eprintln!("  {step}")).map_err(|e| e.to_string())?;
    match options.output {
        Output::Table => print!("{}", bench::table(&rows)),
        Output::Json => println!("{}", bench::json(&rows)),
        Output::Csv => print!("{}", bench::csv(&rows)),
    }
    if let Some(dir) = &options.svg_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let bandwidth = rows.iter().filter(|r| r.unit == "GB/s").map(|r| r.baseline_value).fold(0.0, f64::max);
        let bandwidth = if bandwidth > 0.0 { bandwidth } else { rows.first().map_or(1.0, |r| r.roofline) };
        let peak = gpu.fp32_peak_tflops().unwrap_or(0.0);
        let mut written = vec![dir.join("roofline.svg")];
        std::fs::write(&written[0], bench::roofline_svg(&rows, peak, bandwidth)).map_err(|e| e.to_string())?;
        for family in options.families.iter().map(|f| f.name()) {
            let path = dir.join(format!("baseline_{family}.svg"));
            std::fs::write(&path, bench::baseline_svg(&rows, family)).map_err(|e| e.to_string())?;
            written.push(path);
        }
        for path in written {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// `M=4096,N=4096,K=4096` → [("M", 4096), ..].
fn parse_assignments(text: &str) -> Result<Vec<(String, f64)>, String> {
    text.split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| {
            let (name, value) = part.split_once('=').ok_or(format!("`{part}`: expected NAME=VALUE"))?;
            let value: f64 = value.trim().parse().map_err(|_| format!("`{part}`: {value} is not a number"))?;
            Ok((name.trim().to_string(), value))
        })
        .collect()
}

fn tune(args: &[String]) -> Result<(), String> {
    use tessera::runtime::tune::{self, Outcome, Progress};
    let name = args.first().ok_or("tune needs a kernel name; `tessera list` lists them")?;
    let kernel = catalog::find(name).ok_or_else(|| format!("no catalog kernel `{name}`; `tessera list` lists them"))?;
    let (mut shape, mut scalars, mut dry_run, mut rounds) = (Vec::new(), Vec::new(), false, 2usize);
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--shape" => shape = parse_assignments(rest.next().ok_or("--shape needs M=..,N=..")?)?,
            "--scalar" => scalars = parse_assignments(rest.next().ok_or("--scalar needs alpha=..")?)?,
            "--dry-run" => dry_run = true,
            "--rounds" => {
                rounds = rest
                    .next()
                    .ok_or("--rounds needs a count")?
                    .parse()
                    .map_err(|_| "--rounds needs a count".to_string())?;
                rounds = rounds.max(1);
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let ir = kernel.ir().map_err(|e| e.to_string())?;
    let binding: Vec<(String, i64)> = ir
        .shape_symbols()
        .into_iter()
        .map(|symbol| {
            shape.iter().find(|(s, _)| s == symbol).map(|(s, v)| (s.clone(), *v as i64)).ok_or(format!(
                "--shape gives no value for `{symbol}` (the kernel's shape symbols: {})",
                ir.shape_symbols().join(", ")
            ))
        })
        .collect::<Result<_, _>>()?;
    let space = tessera::dsl::TuneSpace::around(ir);
    let mut bar = |progress: Progress| {
        let (what, done, of) = match progress {
            Progress::Compiled { done, of } => ("compiled", done, of),
            Progress::Measured { done, of } => ("measured", done, of),
        };
        let filled = if of == 0 { 30 } else { done * 30 / of };
        eprint!("\r[{}{}] {done}/{of} {what}   ", "#".repeat(filled), ".".repeat(30 - filled));
        if done == of {
            eprintln!();
        }
    };
    struct NoGpu;
    impl tune::Measure for NoGpu {
        fn measure(&mut self, _: &tessera::dsl::Kernel, _: &str) -> Result<f64, String> {
            Err("no GPU: --dry-run compiles but does not measure".into())
        }
    }
    let gpu = if dry_run {
        None
    } else {
        Some(
            tessera::Gpu::new(0)
                .map_err(|e| format!("tune measures on a GPU: {e}; `--dry-run` shows the space and compiles it"))?,
        )
    };
    let arch = gpu.as_ref().map_or(tessera::Arch::SM_90, |g| g.arch());
    // Each round searches around the best configuration so far (the first around the
    // declared one); the trials of every round are kept.
    let mut report: Option<tune::TuneReport> = None;
    let mut space = space;
    for round in 0..rounds {
        if round > 0 {
            let Some((winner, _)) = report.as_ref().and_then(|r| r.winner()) else { break };
            let mut center = ir.clone();
            center.config = winner.config.clone();
            space = tessera::dsl::TuneSpace::around(&center);
            eprintln!("round {}: around {winner}", round + 1);
        }
        let next = match &gpu {
            Some(gpu) => {
                let mut measure = tune::GpuMeasure::new(gpu, kernel, &binding, &scalars).map_err(|e| e.to_string())?;
                tune::tune(kernel, &space, arch, &binding, &mut measure, &mut bar)
            }
            None => tune::tune(kernel, &space, arch, &binding, &mut NoGpu, &mut bar),
        }
        .map_err(|e| e.to_string())?;
        report = Some(match report {
            None => next,
            Some(mut all) => {
                all.trials.extend(next.trials.into_iter().filter(|t| !matches!(t.outcome, tune::Outcome::Pruned(_))));
                all
            }
        });
        if dry_run {
            break;
        }
    }
    let report = report.ok_or("no tuning round ran")?;
    let count = |f: fn(&Outcome) -> bool| report.trials.iter().filter(|t| f(&t.outcome)).count();
    println!(
        "{}: {} configurations for {} ({arch}): {} pruned by the validator, {} failed to compile, {} spill, {} compiled cleanly, {} measured",
        kernel.name(),
        report.trials.len(),
        report.shape_class,
        count(|o| matches!(o, Outcome::Pruned(_))),
        count(|o| matches!(o, Outcome::CompileFailed(_))),
        count(|o| matches!(o, Outcome::Spills(_))),
        count(|o| matches!(o, Outcome::Measured { .. } | Outcome::Failed(_))),
        count(|o| matches!(o, Outcome::Measured { .. })),
    );
    let mut measured: Vec<(&tessera::dsl::Candidate, f64)> = report
        .trials
        .iter()
        .filter_map(|t| match t.outcome {
            Outcome::Measured { median_ms } => Some((&t.candidate, median_ms)),
            _ => None,
        })
        .collect();
    measured.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (candidate, ms) in measured.iter().take(10) {
        println!("  {ms:>9.4} ms  {candidate}");
    }
    let record = gpu.as_ref().and_then(|g| tune::winning_record(kernel, &report, g.name(), arch));
    if let (Some(gpu), Some(record)) = (&gpu, record) {
        let declared = &ir.config;
        let declared_ms =
            report.trials.iter().find(|t| &t.candidate.config == declared).and_then(|t| match t.outcome {
                Outcome::Measured { median_ms } => Some(median_ms),
                _ => None,
            });
        match gpu.tune_cache() {
            Some(cache) => {
                cache.store(record.clone()).map_err(|e| format!("cannot write {}: {e}", cache.path().display()))?;
                println!(
                    "winner {:.4} ms{} stored in {}; launches of `{}` at shapes like {} use it",
                    record.median_ms,
                    declared_ms.map(|d| format!(" (declared configuration {d:.4} ms)")).unwrap_or_default(),
                    cache.path().display(),
                    kernel.name(),
                    record.shape_class
                );
            }
            None => println!("winner {:.4} ms; not stored (TESSERA_TUNE=off)", record.median_ms),
        }
    }
    Ok(())
}

fn check(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", tessera::check::HELP);
        return Ok(());
    }
    let parsed = tessera::check::parse_args(args)?;
    let kernel = catalog::find(&parsed.kernel)
        .ok_or_else(|| format!("no catalog kernel `{}`; `tessera list` lists them", parsed.kernel))?;
    let report = tessera::check::check(kernel, &parsed.options).map_err(|e| e.to_string())?;
    let text = if parsed.json { format!("{}\n", report.to_json()) } else { report.to_string() };
    // A closed pipe (`tessera check .. | head`) is the reader's choice, not an error.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    Ok(())
}

fn show(args: &[String]) -> Result<(), String> {
    let name = args.first().ok_or("show needs a kernel name; `tessera list` lists them")?;
    let kernel = catalog::find(name).ok_or_else(|| format!("no catalog kernel `{name}`; `tessera list` lists them"))?;
    let mut width: Option<VectorWidth> = None;
    let mut overrides: Vec<(String, i64)> = Vec::new();
    let mut arch = Arch::SM_90;
    let mut output = Output::Source;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--vector" => {
                let value = rest.next().ok_or("--vector needs 1, 2 or 4")?;
                width = Some(
                    value
                        .parse()
                        .ok()
                        .and_then(VectorWidth::new)
                        .ok_or(format!("--vector {value}: expected 1, 2 or 4"))?,
                );
            }
            "--config" => {
                let text = rest.next().ok_or("--config needs NAME=VALUE,.. e.g. BM=64,BK=16,threads=128")?;
                for (name, value) in parse_assignments(text)? {
                    overrides.push((name, value as i64));
                }
            }
            "--arch" => arch = rest.next().ok_or("--arch needs a value like sm_90")?.parse()?,
            "--ptx" => output = Output::Ptx,
            "--sass" => output = Output::Sass,
            "--log" => output = Output::Log,
            "--report" => output = Output::Report,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if let Some(width) = width {
        overrides.push(("vector".into(), i64::from(width.get())));
    }
    let declared = kernel.ir().map_err(|e| e.to_string())?;
    let configured = tessera::dsl::configure(declared, &overrides)?;
    let source = if configured.config == declared.config {
        kernel.cuda_source().to_string()
    } else {
        tessera::codegen::render(&configured).map_err(|e| e.to_string())?
    };
    match output {
        Output::Report => print!("{}", tessera::dsl::analyze(&configured).map_err(|e| e.to_string())?),
        Output::Source => print!("{source}"),
        Output::Ptx => print!("{}", nvrtc::compile_ptx(&source, kernel.name(), arch).map_err(|e| e.to_string())?),
        Output::Sass => {
            let compiled = nvrtc::compile_cubin(&source, kernel.name(), arch).map_err(|e| e.to_string())?;
            let path = std::env::temp_dir().join(format!("tessera-{}-{}.cubin", kernel.name(), std::process::id()));
            std::fs::write(&path, &compiled.cubin).map_err(|e| e.to_string())?;
            let listing = std::process::Command::new("cuobjdump").arg("-sass").arg(&path).output();
            let _ = std::fs::remove_file(&path);
            match listing {
                Ok(out) if out.status.success() => print!("{}", String::from_utf8_lossy(&out.stdout)),
                Ok(out) => return Err(format!("cuobjdump failed: {}", String::from_utf8_lossy(&out.stderr))),
                Err(_) => return Err(
                    "cuobjdump is not on PATH: it comes with the CUDA toolkit, or `pip install nvidia-cuda-cuobjdump`"
                        .into(),
                ),
            }
        }
        Output::Log => {
            let compiled = nvrtc::compile_cubin(&source, kernel.name(), arch).map_err(|e| e.to_string())?;
            println!("{}", compiled.log.trim_end());
            println!("parsed: {}", compiled.ptxas);
        }
    }
    Ok(())
}
