//! `tessera`: inspect, check, tune and measure the catalog's kernels. `tessera --help` and
//! `tessera <subcommand> --help` document every option (the declarations are in
//! [`tessera::cli`]).

use std::process::ExitCode;

use clap::Parser;
use tessera::cli::{catalog_kernel, BenchArgs, CheckArgs, Cli, Command, ProgressLine, ShowArgs, ShowOutput, TuneArgs};
use tessera::{catalog, nvrtc};

fn main() -> ExitCode {
    // `tessera list | head`: end quietly when the reader goes away, as Unix tools do, rather
    // than panic in println! (Rust ignores SIGPIPE unless told otherwise)
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal before any thread is started
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List { filter } => list(filter.as_deref().unwrap_or_default()),
        Command::Show(args) => show(args),
        Command::Check(args) => check(args),
        Command::Tune(args) => tune(args),
        Command::Bench(args) => bench(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tessera: {message}");
            ExitCode::from(2)
        }
    }
}

fn list(filter: &str) -> Result<(), String> {
    let listed: Vec<_> = catalog::all().into_iter().filter(|kernel| kernel.name().contains(filter)).collect();
    if listed.is_empty() {
        return Err(format!("no catalog kernel's name holds `{filter}`"));
    }
    let width = listed.iter().map(|kernel| kernel.name().len()).max().unwrap_or(0);
    for kernel in listed {
        let config = &kernel.ir().map_err(|e| e.to_string())?.config;
        println!("{:<width$}  {}", kernel.name(), tessera::codegen::attribute_text(config));
    }
    Ok(())
}

fn bench(args: BenchArgs) -> Result<(), String> {
    use tessera::bench::{self, BenchOptions, Output};
    for name in &args.kernels {
        let kernel = catalog_kernel(name)?;
        if !tessera::bench::Family::ALL.iter().any(|family| family.kernels().iter().any(|k| k.name() == kernel.name()))
        {
            return Err(format!("`{name}` is in no bench family; `tessera bench --help` lists the families"));
        }
    }
    let dependent_launches = !args.no_dependent_launches;
    let options = BenchOptions::from(args);
    let gpu = tessera::Gpu::new(0)
        .map_err(|e| format!("bench measures on a GPU: {e}"))?
        .with_dependent_launches(dependent_launches);
    eprintln!(
        "{} ({}), L2 {} flushed before every repetition, later passes launched {}",
        gpu.name(),
        gpu.arch(),
        if options.flush_l2 { "cache" } else { "not" },
        if gpu.dependent_launches() { "as dependents of the pass before" } else { "after the pass before" }
    );
    let bar = ProgressLine::new();
    let rows = bench::run(&gpu, &options, &mut |p| bar.step(p.done, p.of, p.step)).map_err(|e| e.to_string())?;
    bar.finish();
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
        let mut charts = vec![(dir.join("roofline.svg"), bench::roofline_svg(&rows, peak, bandwidth))];
        for family in options.families.iter().map(|f| f.name()) {
            charts.push((dir.join(format!("baseline_{family}.svg")), bench::baseline_svg(&rows, family)));
        }
        for (path, chart) in charts {
            std::fs::write(&path, chart.map_err(|e| e.to_string())?).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn tune(args: TuneArgs) -> Result<(), String> {
    use tessera::runtime::tune::{self, Outcome, Progress};
    let kernel = catalog_kernel(&args.kernel)?;
    let (shape, dry_run, rounds) = (args.shape.0, args.dry_run, args.rounds as usize);
    let scalars = args.scalar.map(|s| s.0).unwrap_or_default();
    let ir = kernel.ir().map_err(|e| e.to_string())?;
    let binding: Vec<(String, i64)> = ir
        .shape_symbols()
        .into_iter()
        .map(|symbol| {
            shape.iter().find(|(s, _)| s == symbol).cloned().ok_or(format!(
                "--shape gives no value for `{symbol}` (the kernel's shape symbols: {})",
                ir.shape_symbols().join(", ")
            ))
        })
        .collect::<Result<_, _>>()?;
    let space = tessera::dsl::TuneSpace::around(ir);
    let line = ProgressLine::new();
    let mut bar = |progress: Progress| match progress {
        Progress::Compiled { done, of } => line.step(done, of, "compiled"),
        Progress::Measured { done, of } => line.step(done, of, "measured"),
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
            // the winner's vector may be one the shape narrowed: ask for the declared width
            // again, which the tuner narrows the same way
            space =
                tessera::dsl::TuneSpace { vectors: space.vectors.clone(), ..tessera::dsl::TuneSpace::around(&center) };
            line.println(&format!("round {}: around {winner}", round + 1));
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
    line.finish();
    let report = report.ok_or("no tuning round ran")?;
    let count = |f: fn(&Outcome) -> bool| report.trials.iter().filter(|t| f(&t.outcome)).count();
    println!(
        "{}: {} configurations for shapes of class {} ({arch}): {} pruned by the validator, {} failed to compile, {} spill, {} compiled cleanly, {} measured",
        kernel.name(),
        report.trials.len(),
        report.shape_class,
        count(|o| matches!(o, Outcome::Pruned(_))),
        count(|o| matches!(o, Outcome::CompileFailed(_))),
        count(|o| matches!(o, Outcome::Spills(_))),
        count(|o| matches!(o, Outcome::Measured { .. } | Outcome::Failed(_))),
        count(|o| matches!(o, Outcome::Measured { .. })),
    );
    println!("  (a shape class rounds each extent up to a power of two; v: a multiple of 4, vector accesses; s: not)");
    // the few most common reasons, so a space pruned whole says why
    let reasons = report.pruned_reasons();
    for (reason, pruned) in reasons.iter().take(3) {
        println!("  pruned {pruned:>4}: {}", reason.lines().next().unwrap_or_default());
    }
    if reasons.len() > 3 {
        println!(
            "  pruned {:>4}: for {} other reasons",
            reasons[3..].iter().map(|r| r.1).sum::<usize>(),
            reasons.len() - 3
        );
    }
    // candidates that ran but were refused (their results differ from the declared
    // configuration's, or the launch failed): the first of them says why
    let failed: Vec<(&tessera::dsl::Candidate, &str)> = report
        .trials
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Failed(why) => Some((&t.candidate, why.as_str())),
            _ => None,
        })
        .collect();
    if dry_run {
        println!("  dry run: the {} that compiled cleanly were not measured", failed.len());
    } else if let Some((candidate, why)) = failed.first() {
        println!("  failed {:>4}: {candidate}: {}", failed.len(), why.lines().next().unwrap_or_default());
    }
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
                    "winner `{}`, {:.4} ms{} stored in {}; launches of `{}` at shapes like {} use it",
                    measured.first().map(|(candidate, _)| candidate.to_string()).unwrap_or_default(),
                    record.median_ms,
                    declared_ms.map(|d| format!(" (declared configuration {d:.4} ms)")).unwrap_or_default(),
                    cache.path().display(),
                    kernel.name(),
                    record.shape_class
                );
            }
            None => println!(
                "winner `{}`, {:.4} ms; not stored (TESSERA_TUNE=off)",
                measured.first().map(|(candidate, _)| candidate.to_string()).unwrap_or_default(),
                record.median_ms
            ),
        }
    }
    Ok(())
}

fn check(args: CheckArgs) -> Result<(), String> {
    let kernel = catalog_kernel(&args.kernel)?;
    let report = tessera::check::check(kernel, &args.options()).map_err(|e| e.to_string())?;
    let text = if args.json { format!("{}\n", report.to_json()) } else { report.to_string() };
    // A closed pipe (`tessera check .. | head`) is the reader's choice, not an error.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    Ok(())
}

fn show(args: ShowArgs) -> Result<(), String> {
    let kernel = catalog_kernel(&args.kernel)?;
    let mut overrides: Vec<(String, i64)> = args.config.clone().map(|c| c.0).unwrap_or_default();
    if let Some(width) = args.vector {
        overrides.push(("vector".into(), i64::from(width.get())));
    }
    let arch = args.arch;
    let declared = kernel.ir().map_err(|e| e.to_string())?;
    let configured = tessera::dsl::configure(declared, &overrides).map_err(|error| match kernel.source_file() {
        Some(file) if matches!(error, tessera::dsl::ConfigureError::Invalid { .. }) => {
            format!("{error}\n(lines and columns of {file}, where `{}` is declared)", kernel.name())
        }
        _ => error.to_string(),
    })?;
    let source = if configured.config == declared.config {
        kernel.cuda_source().to_string()
    } else {
        tessera::codegen::render(&configured).map_err(|e| e.to_string())?
    };
    match args.output() {
        ShowOutput::Report => print!("{}", tessera::dsl::analyze(&configured).map_err(|e| e.to_string())?),
        ShowOutput::Source => print!("{source}"),
        ShowOutput::Ptx => print!("{}", nvrtc::compile_ptx(&source, kernel.name(), arch).map_err(|e| e.to_string())?),
        ShowOutput::Sass => {
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
        ShowOutput::Log => {
            let compiled = nvrtc::compile_cubin(&source, kernel.name(), arch).map_err(|e| e.to_string())?;
            println!("{}", compiled.log.trim_end());
            println!("parsed: {}", compiled.ptxas);
        }
    }
    Ok(())
}
