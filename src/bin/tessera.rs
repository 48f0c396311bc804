//! `tessera`: inspect the catalog's kernels.
//!
//! ```text
//! tessera list
//! tessera show <kernel> [--vector 1|2|4] [--arch sm_90] [--ptx | --log | --report]
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
        Some("check") => check(&args[1..]),
        _ => Err(
            "usage: tessera list | tessera show <kernel> [--vector 1|2|4] [--arch sm_XY] [--ptx | --log | --report]\n       tessera check <kernel> [--arch sm_XY] [--shape M=4096,N=4096,K=4096] [--gpu NAME] [--no-nvrtc] [--json] (--help: more)"
                .into(),
        ),
    }
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
    let mut width = kernel.ir().map_err(|e| e.to_string())?.config.vector;
    let mut arch = Arch::SM_90;
    let mut output = Output::Source;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--vector" => {
                let value = rest.next().ok_or("--vector needs 1, 2 or 4")?;
                width = value
                    .parse()
                    .ok()
                    .and_then(VectorWidth::new)
                    .ok_or(format!("--vector {value}: expected 1, 2 or 4"))?;
            }
            "--arch" => arch = rest.next().ok_or("--arch needs a value like sm_90")?.parse()?,
            "--ptx" => output = Output::Ptx,
            "--log" => output = Output::Log,
            "--report" => output = Output::Report,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let source = kernel.source_with_vector(width).map_err(|e| e.to_string())?;
    match output {
        Output::Report => {
            let mut ir = kernel.ir().map_err(|e| e.to_string())?.clone();
            ir.config.vector = width;
            print!("{}", tessera::dsl::analyze(&ir).map_err(|e| e.to_string())?);
        }
        Output::Source => print!("{source}"),
        Output::Ptx => print!("{}", nvrtc::compile_ptx(&source, kernel.name(), arch).map_err(|e| e.to_string())?),
        Output::Log => {
            let compiled = nvrtc::compile_cubin(&source, kernel.name(), arch).map_err(|e| e.to_string())?;
            println!("{}", compiled.log.trim_end());
            println!("parsed: {}", compiled.ptxas);
        }
    }
    Ok(())
}
