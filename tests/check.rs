//! `tessera check`: its arguments, its report (text and JSON) from the library function the
//! CLI calls and from the built binary, the registers NVRTC allocates (the same figure as
//! the ptxas log of that compile), and the roofline worked by hand. No GPU needed; NVRTC is.

use std::process::Command;

use clap::Parser;
use tessera::catalog::{copy, sgemm};
use tessera::check::{check, CheckOptions, JSON_SCHEMA};
use tessera::cli::{CheckArgs, Cli, Command as Subcommand};
use tessera::dsl::{roofline, Bound, GpuSpec, Limiter, Occupancy, Target};
use tessera::PtxasReport;

fn parse(args: &[&str]) -> Result<CheckArgs, String> {
    let cli = Cli::try_parse_from(["tessera", "check"].iter().chain(args)).map_err(|e| e.to_string())?;
    match cli.command {
        Subcommand::Check(args) => Ok(args),
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn check_arguments_parse_into_options_and_bad_ones_say_what_is_expected() {
    let parsed = parse(&["sgemm_v3"]).unwrap();
    let options = parsed.options();
    assert_eq!(parsed.kernel, "sgemm_v3");
    assert_eq!(options.target, Target::SM_90, "sm_90 by default");
    assert!(options.shape.is_empty() && options.gpu.is_none() && options.nvrtc && !parsed.json);

    let parsed =
        parse(&["--json", "sgemm_v5", "--arch", "sm_86", "--shape", "M=1000, N=17,K=3", "--gpu", "h200", "--no-nvrtc"])
            .unwrap();
    let options = parsed.options();
    assert_eq!(parsed.kernel, "sgemm_v5");
    assert_eq!(options.target, Target::SM_86);
    assert_eq!(options.shape, vec![("M".into(), 1000), ("N".into(), 17), ("K".into(), 3)]);
    assert_eq!(options.gpu.map(|g| g.name), Some("H200"));
    assert!(parsed.json && !options.nvrtc);

    let error = |args: &[&str]| parse(args).unwrap_err();
    assert!(error(&["k", "--arch", "sm_75"]).contains("expected one of sm_80, sm_86, sm_89, sm_90"));
    assert!(error(&["k", "--arch"]).contains("a value is required for '--arch <ARCH>'"));
    assert!(error(&["k", "--shape", "M4096"]).contains("`M4096` is not NAME=value"));
    assert!(error(&["k", "--shape", "M=big"]).contains("`big` in `M=big` is not a value of type i64"));
    assert!(error(&["k", "--shape", "M=0"]).contains("positive"));
    assert!(error(&["k", "--gpu", "rtx9090"]).contains("expected one of A100 SXM, A40, L40S, H100 SXM, H200"));
    assert!(error(&["k", "--fast"]).contains("unexpected argument '--fast'"));
    assert!(error(&["k", "other"]).contains("unexpected argument 'other'"));
    assert!(error(&["--json"]).contains("required arguments were not provided"));
}

fn fresh(target: Target) -> CheckOptions {
    // no disk cache: NVRTC compiles, and its log is the one the registers came from
    CheckOptions { cache: None, ..CheckOptions::new(target) }
}

#[test]
fn the_registers_are_those_of_the_ptxas_log_of_the_same_compile_and_bound_the_occupancy() {
    for target in [Target::SM_80, Target::SM_90] {
        let report = check(&sgemm::sgemm_v3::KERNEL, &fresh(target)).unwrap();
        let registers = report.registers.as_ref().expect("NVRTC compiled it");
        let log = report.nvrtc_log.as_deref().unwrap();
        let ptxas = PtxasReport::parse(log, "sgemm_v3").unwrap_or_else(|| panic!("no figures in:\n{log}"));
        assert_eq!(registers.per_thread, ptxas.registers, "{log}");
        assert_eq!(registers.from, "ptxas log");
        assert!(registers.per_thread > 64 && registers.per_thread <= 255, "{registers:?}");

        // The occupancy is the calculator's, with exactly those registers.
        let expected = Occupancy::new(&target, 256, 16_384, Some(ptxas.registers));
        assert_eq!(report.occupancy, expected);
        assert_eq!(report.occupancy_before_registers, Occupancy::new(&target, 256, 16_384, None));
        // 256 threads, 16 KiB: 8 blocks by warps on both, 9 (sm_80) / 13 (sm_90) by shared
        // memory; 65–128 registers allow 2 blocks of 8 warps, 129–255 only 1.
        assert_eq!(report.occupancy_before_registers.blocks_per_sm, 8);
        let by_registers = if ptxas.registers <= 128 { 2 } else { 1 };
        assert_eq!(report.occupancy.blocks_per_sm, by_registers);
        assert_eq!(report.occupancy.limited_by, vec![Limiter::Registers]);
    }
}

#[test]
fn tensor_core_kernels_are_measured_against_the_tensor_core_peak() {
    let shape = vec![("M".to_string(), 4096), ("N".to_string(), 4096), ("K".to_string(), 4096)];
    let h100 = GpuSpec::find("H100 SXM").unwrap();
    // the same 137.4 GFLOP: mma.sync and wgmma at the dense BF16 peak, TF32 (both) at half of it,
    // FFMA at the FP32 one
    for (kernel, peak) in [
        (&tessera::catalog::hgemm::hgemm_v17_bf16::KERNEL, 989.4e12),
        (&tessera::catalog::hgemm::hgemm_v11_bf16::KERNEL, 989.4e12),
        (&tessera::catalog::hgemm::gemm_tf32::KERNEL, 494.7e12),
        (&tessera::catalog::hgemm::gemm_tf32_wgmma_bt::KERNEL, 494.7e12),
        (&sgemm::sgemm_v3::KERNEL, 67.0e12),
    ] {
        let r = roofline(kernel.ir().unwrap(), &shape, &h100).unwrap();
        assert_eq!(r.peak_flops_per_second, peak, "{}", kernel.name());
        assert!((r.compute_seconds - r.flops / peak).abs() < 1e-12, "{}", kernel.name());
    }
}

#[test]
fn the_roofline_of_sgemm_at_4096_cubed_is_compute_bound_as_worked_by_hand() {
    let kernel = sgemm::sgemm_v3::KERNEL.ir().unwrap();
    let shape = vec![("M".to_string(), 4096), ("N".to_string(), 4096), ("K".to_string(), 4096)];
    let h100 = GpuSpec::find("H100 SXM").unwrap();
    let r = roofline(kernel, &shape, &h100).unwrap();
    // grid: 4096 / 128 = 32 × 32 = 1 024 blocks
    assert_eq!((r.grid.clone(), r.blocks), (vec![32, 32], 1024));
    // FLOPs: 2 · M · N · K = 2 · 4096³ = 137 438 953 472
    assert_eq!(r.flops, 137_438_953_472.0);
    // compulsory: A, B and C read once, C written once: 4 × 4096² × 4 B = 268 435 456 B
    assert_eq!(r.compulsory_bytes, 268_435_456.0);
    // issued, per block: 512 k-tiles × (128×8 + 8×128) × 4 B = 4 MiB of A and B, plus C read
    // and written (β ≠ 0): 2 × 128 × 128 × 4 B = 128 KiB → (4 194 304 + 131 072) × 1 024
    assert_eq!(r.issued_bytes, 4_429_185_024.0);
    // 137.4 GFLOP / 67 TFLOP/s = 2.051 ms ≫ 268 MB / 3.35 TB/s = 80 µs: compute-bound
    assert!((r.compute_seconds - 2.0513e-3).abs() < 1e-6, "{}", r.compute_seconds);
    assert!((r.memory_seconds - 80.13e-6).abs() < 1e-8, "{}", r.memory_seconds);
    assert_eq!((r.bound_by, r.bound_seconds), (Bound::Compute, r.compute_seconds));
    assert_eq!(r.intensity(), 512.0);

    // y = x on 2²⁴ floats: 128 MiB moved, no FLOPs: memory-bound at 67.1 µs on an A100
    let copy = copy::copy_f32x4::KERNEL.ir().unwrap();
    let r = roofline(copy, &[("N".into(), 1 << 24)], &GpuSpec::default_for(&Target::SM_80)).unwrap();
    assert_eq!((r.flops, r.compulsory_bytes, r.issued_bytes), (0.0, 134_217_728.0, 134_217_728.0));
    assert_eq!(r.bound_by, Bound::Memory);
    assert!((r.bound_seconds - 67.1e-6).abs() < 1e-7, "{}", r.bound_seconds);

    // the grid-stride copy walks the same 2¹⁴ tiles with fewer blocks: the same traffic
    let strided = copy::copy_f32x4_grid_stride::KERNEL.ir().unwrap();
    let s = roofline(strided, &[("N".into(), 1 << 24)], &GpuSpec::default_for(&Target::SM_80)).unwrap();
    assert_eq!((s.blocks, s.issued_bytes, s.compulsory_bytes), (1 << 14, r.issued_bytes, r.compulsory_bytes));

    // a symbol the kernel lacks, or one left out, is an error naming them
    let missing = roofline(kernel, &shape[..2], &h100).unwrap_err().to_string();
    assert!(missing.contains("no value for `K`"), "{missing}");
    let unknown = roofline(copy, &[("Q".into(), 3)], &h100).unwrap_err().to_string();
    assert!(unknown.contains("`Q` is not a shape symbol of the kernel; its shape symbols are N"), "{unknown}");
}

#[test]
fn the_text_report_is_an_aligned_table_of_resources_occupancy_roofline_and_accesses() {
    let options = CheckOptions {
        shape: vec![("M".into(), 4096), ("N".into(), 4096), ("K".into(), 4096)],
        ..fresh(Target::SM_80)
    };
    let report = check(&sgemm::sgemm_v3::KERNEL, &options).unwrap();
    let text = report.to_string();
    let registers = report.registers.as_ref().unwrap().per_thread;
    for wanted in [
        "sgemm_v3 on sm_80: threads = 256, vector = 4, consts(BM = 128, BN = 128, BK = 8, TM = 8, TN = 8)\n",
        "\nresources per block\n",
        "  threads               256 (8 warps)\n",
        "  shared memory         16384 B (16.0 KiB), static (buffers to 48128 B; 166912 B with opt-in)\n",
        &format!("  registers             {registers} per thread, no spills (NVRTC "),
        "\noccupancy per SM on sm_80             blocks\n",
        "  warp slots (64 warps)                    8\n",
        "  block slots (32)                        32\n",
        "  shared memory (17408 B per block)        9\n",
        "  resident                                 2  blocks, 16 warps: 25% of 64, limited by registers\n",
        "\nroofline at M=4096, K=4096, N=4096 on A100 SXM (2.00 TB/s DRAM, 19.5 TFLOP/s: data-sheet peaks, assumed)\n",
        "  grid                  32 × 32 = 1024 blocks\n",
        "  FLOPs                 137.4 GFLOP (2 per multiply-add of mma)\n",
        "  global traffic        268.4 MB compulsory (each tensor once)\n",
        "                        4.4 GB as issued (every tile load and store, no cache reuse)\n",
        "  intensity             512.00 FLOP/B compulsory, 31.03 FLOP/B issued\n",
        "  time bound            ≥ 7.048 ms, compute-bound\n",
        "\nstatic analysis: 2 barriers\n",
        "    load  shared a_s.t()  128-bit × 16  conflict-free\n",
    ] {
        assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
    }
    // registers × 32 rounded up to the 256-register allocation unit
    assert!(text.contains(&format!("  registers ({} per warp)", (registers * 32).div_ceil(256) * 256)), "{text}");
    // the limit is marked on its row, and only there
    assert_eq!(text.matches("← limit").count(), 1, "{text}");
    assert!(!text.contains("default extents"), "every symbol was given: {text}");
}

#[test]
fn the_json_report_follows_the_schema_in_the_help() {
    let report = check(&sgemm::sgemm_v5::KERNEL, &fresh(Target::SM_90)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    for key in [
        "kernel",
        "config",
        "arch",
        "threads_per_block",
        "warps_per_block",
        "shared_memory",
        "registers",
        "registers_unavailable",
        "occupancy_before_registers",
        "occupancy",
        "roofline",
        "barriers",
        "accesses",
        "reductions",
    ] {
        assert!(json.get(key).is_some(), "no `{key}` in {json}");
        assert!(JSON_SCHEMA.contains(&format!("\"{key}\"")), "`{key}` is not documented in the schema");
    }
    assert_eq!(json["kernel"], "sgemm_v5");
    assert_eq!(json["arch"], "sm_90");
    assert_eq!(json["shared_memory"]["bytes"], 32_768);
    assert_eq!(json["shared_memory"]["dynamic"], false);
    assert_eq!(json["shared_memory"]["buffers"][1]["buffer"], "b_s");
    assert_eq!(json["shared_memory"]["buffers"][1]["offset"], 16_384);
    assert_eq!(json["registers"]["per_thread"], report.registers.as_ref().unwrap().per_thread);
    assert!(json["registers_unavailable"].is_null());
    let occupancy = &json["occupancy"];
    for key in ["blocks_by_warps", "blocks_by_shared_memory", "blocks_by_registers", "limited_by", "max_warps_per_sm"] {
        assert!(occupancy.get(key).is_some(), "no occupancy `{key}`");
        assert!(JSON_SCHEMA.contains(&format!("\"{key}\"")), "`{key}` is not documented in the schema");
    }
    // min_blocks = 2 holds registers at 128: 2 blocks
    assert_eq!(occupancy["blocks_per_sm"], 2);
    let roofline = &json["roofline"];
    for key in
        ["gpu", "shape", "shape_defaults", "flops", "compulsory_bytes", "issued_bytes", "bound_seconds", "bound_by"]
    {
        assert!(roofline.get(key).is_some(), "no roofline `{key}`");
        assert!(JSON_SCHEMA.contains(&format!("\"{key}\"")), "`{key}` is not documented in the schema");
    }
    assert_eq!(roofline["gpu"]["name"], "H100 SXM");
    assert_eq!(roofline["shape_defaults"], serde_json::json!(["M", "K", "N"]));
    assert_eq!(roofline["bound_by"], "compute");
    let access = &json["accesses"][0];
    assert_eq!((access["space"].as_str(), access["direction"].as_str()), (Some("global"), Some("load")));
}

#[test]
fn without_nvrtc_the_report_says_so_and_keeps_the_bounds_that_need_no_registers() {
    let options = CheckOptions { nvrtc: false, ..fresh(Target::SM_90) };
    let report = check(&sgemm::sgemm_v3::KERNEL, &options).unwrap();
    assert!(report.registers.is_none());
    assert_eq!(report.occupancy, report.occupancy_before_registers);
    assert_eq!(report.occupancy.blocks_per_sm, 8);
    let text = report.to_string();
    assert!(text.contains("  registers             unknown: not compiled (--no-nvrtc)\n"), "{text}");
    assert!(text.contains("registers (not known)                    ?\n"), "{text}");
    assert!(text.contains("limited by warps (an upper bound: registers can only lower it)"), "{text}");
}

#[test]
fn every_catalog_kernel_checks_on_every_architecture() {
    for kernel in tessera::catalog::all() {
        for target in Target::KNOWN {
            let report = check(kernel, &CheckOptions { nvrtc: false, ..fresh(target) })
                .unwrap_or_else(|e| panic!("{} on {}: {e}", kernel.name(), target.name()));
            // a kernel declared for one architecture (sgemm_v10: 149 KiB of shared memory) may not
            // fit the others' SMs, and check says so with 0 blocks
            let shared = kernel.ir().unwrap().shared_memory().bytes;
            let fits = shared <= i64::from(target.opt_in_shared_memory_bytes);
            assert_eq!(report.occupancy.blocks_per_sm >= 1, fits, "{}: {:?}", kernel.name(), report.occupancy);
            assert!(report.roofline.roofline.bound_seconds > 0.0, "{}", kernel.name());
            assert!(!report.to_string().is_empty());
        }
    }
}

fn tessera(args: &[&str]) -> std::process::Output {
    Command::new(tessera_binary()).args(args).output().unwrap()
}

#[test]
fn the_binary_prints_the_table_the_json_and_the_help() {
    let out = tessera(&["check", "transpose_padded", "--arch", "sm_80", "--shape", "R=8192,C=8192"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("transpose_padded on sm_80: threads = (32, 8)"), "{text}");
    assert!(text.contains("roofline at R=8192, C=8192 on A100 SXM"), "{text}");
    // 2 × 8192² × 4 B = 536.9 MB at 2 TB/s
    assert!(text.contains("  time bound            ≥ 268.44 µs, memory-bound\n"), "{text}");

    let out = tessera(&["check", "sgemm_v3", "--json", "--gpu", "h200"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["roofline"]["gpu"]["name"], "H200");
    assert_eq!(json["roofline"]["gpu"]["dram_bytes_per_second"], 4.8e12);

    let out = tessera(&["check", "--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"occupancy_before_registers\": OCCUPANCY"));

    let out = tessera(&["check", "sgemm_v99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no catalog kernel `sgemm_v99`"));
    let out = tessera(&["check", "sgemm_v3", "--arch", "sm_70"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("invalid value 'sm_70' for '--arch <ARCH>': expected one of sm_80, sm_86, sm_89, sm_90"));

    // `list` and `show` still work
    let out = tessera(&["list"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("sgemm_v6"));
    let out = tessera(&["show", "transpose_padded", "--report"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("sm_90   8 blocks  64 warps (100%)  limited by warps"), "{report}");
}

#[test]
fn the_binary_without_nvrtc_on_its_library_path_reports_the_bounds_it_can() {
    let out =
        Command::new(tessera_binary()).args(["check", "copy_f32x4"]).env_remove("LD_LIBRARY_PATH").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    // Either NVRTC is installed system-wide and compiles it, or the report says it is missing.
    let compiled = text.contains(" per thread, no spills (NVRTC ");
    let missing = text.contains("registers             unknown: NVRTC not found (libnvrtc is not on the library path)");
    assert!(compiled != missing, "{text}");
    assert!(text.contains("  resident                                 8  blocks, 64 warps: 100% of 64"), "{text}");
}

#[test]
fn the_binary_names_the_kernels_a_wrong_name_may_mean_and_ends_quietly_when_its_reader_does() {
    let out = tessera(&["show", "softmax"]);
    assert_eq!(out.status.code(), Some(2));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(error.contains("no catalog kernel `softmax`; did you mean softmax_"), "{error}");
    let out = tessera(&["check", "sgemm_v1x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean sgemm_v1, sgemm_v10, sgemm_v11?"));
    // `list softmax` lists the softmax kernels only
    let out = tessera(&["list", "softmax_block"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && listed.lines().count() >= 2, "{listed}");
    assert!(listed.lines().all(|line| line.starts_with("softmax_block")), "{listed}");
    // an invalid --config names its values as written and the file that declares the kernel
    let out = tessera(&["show", "copy_f32x4", "--config", "TILE=1000"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(error.contains("`copy_f32x4` with TILE = 1000 is invalid"), "{error}");
    assert!(error.contains("src/catalog/copy.rs"), "{error}");

    // `tessera list | head -0`: the reader is gone before the first line (the whole list
    // would fit in a pipe's buffer, so a reader that took a line first might not be)
    let mut child = Command::new(tessera_binary())
        .arg("list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!error.contains("panicked"), "{error}");
    assert_ne!(out.status.code(), Some(101), "{error}");
}

/// The CLI cargo built for this test, or — where the tests were copied to another machine
/// without that path (the GPU machine's bundle) — the `tessera` beside this test executable.
fn tessera_binary() -> std::path::PathBuf {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    if built.exists() {
        return built;
    }
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join("tessera")));
    beside.filter(|path| path.exists()).unwrap_or(built)
}

#[test]
fn a_persistent_kernel_says_in_what_order_its_blocks_take_tiles() {
    let options = CheckOptions { nvrtc: false, ..fresh(Target::SM_90) };
    let schedule = |kernel| check(kernel, &options).unwrap().tile_schedule.unwrap();
    use tessera::catalog::attention;
    let dynamic = schedule(&attention::attention_forward_wgmma_tma_bf16_d128_causal::KERNEL);
    assert!(dynamic.contains("from a counter") && dynamic.contains("groups of 8 rows"), "{dynamic}");
    let zigzag = schedule(&attention::attention_forward_wgmma_tma_bf16_d256_causal::KERNEL);
    assert!(zigzag.contains("every other round from its end"), "{zigzag}");
    let in_turn = schedule(&attention::attention_forward_wgmma_tma_bf16_d128::KERNEL);
    assert!(in_turn.ends_with("take the tiles in turn"), "{in_turn}");
}

#[test]
fn a_clustered_kernel_says_how_its_blocks_take_tiles_and_what_they_multicast() {
    let options = CheckOptions { nvrtc: false, ..fresh(Target::SM_90) };
    let report = check(&tessera::catalog::hgemm::hgemm_v18_bf16::KERNEL, &options).unwrap();
    let schedule = report.tile_schedule.clone().unwrap();
    assert!(
        schedule.contains("clusters of 2") && schedule.contains("along y") && schedule.contains("b's tile"),
        "{schedule}"
    );
    let b = report.tma.iter().find(|copy| copy.tensor == "b").unwrap();
    assert_eq!((b.boxes, b.row_slices, b.multicast), (4, 1, Some(2)));
    let a = report.tma.iter().find(|copy| copy.tensor == "a").unwrap();
    assert_eq!(a.multicast, None);
    let text = report.to_string();
    assert!(text.contains("512 tiles") && text.contains("2 boxes issued by each"), "{text}");
    assert!(report.to_json().contains("\"tile_schedule\""));
    assert!(JSON_SCHEMA.contains("tile_schedule") && JSON_SCHEMA.contains("multicast"));
    // TF32's one-panel Bᵀ tile goes in two row slices, one a block
    let report = check(&tessera::catalog::hgemm::gemm_tf32_wgmma_bt_clusters::KERNEL, &options).unwrap();
    let b = report.tma.iter().find(|copy| copy.tensor == "b").unwrap();
    assert_eq!((b.boxes, b.row_slices, b.box_rows, b.multicast), (1, 2, 128, Some(2)));
    // one block a tile: no schedule to explain
    let report = check(&sgemm::sgemm_v7::KERNEL, &options).unwrap();
    assert_eq!(report.tile_schedule, None);
}

#[test]
fn a_tma_store_is_reported_as_boxes_not_thread_stores() {
    let options = CheckOptions { nvrtc: false, ..fresh(Target::SM_90) };
    let report = check(&tessera::catalog::hgemm::hgemm_v19_bf16_to_bf16::KERNEL, &options).unwrap();
    let c = report.tma.iter().find(|copy| copy.tensor == "c").unwrap();
    assert!(c.store && c.statement.ends_with(".by_tma()"));
    assert_eq!((c.box_rows, c.box_cols, c.box_bytes), (16, 64, 2048));
    assert!(!report.accesses.iter().any(|access| access.statement.contains("by_tma")), "no thread stores of C");
    // the two staging buffers of each of the eight compute warps, beside the four stages
    assert_eq!(report.shared_memory.bytes, 4 * 48 * 1024 + 8 * 2 * 2048);
    assert!(report.shared_memory.buffers.iter().any(|slot| slot.buffer == "tessera_store_staging"));
}

#[test]
fn reductions_are_reported_with_their_lanes_rounds_and_barriers() {
    use tessera::catalog::{norm, softmax};
    use tessera::dsl::ReductionScope;
    let options = CheckOptions { nvrtc: false, ..fresh(Target::SM_90) };
    // a row per group of 8 lanes: two butterflies of 3 rounds, no barrier
    let groups = check(&softmax::softmax_warp_bf16::KERNEL, &options).unwrap();
    let functions: Vec<_> =
        groups.reductions.iter().map(|r| (r.function.as_str(), r.scope, r.shuffle_rounds)).collect();
    assert_eq!(functions, [("warp_max", ReductionScope::Lanes(8), 3), ("warp_sum", ReductionScope::Lanes(8), 3)]);
    assert_eq!(groups.barriers, 0);
    assert!(groups.to_string().contains("reduce   warp_max over groups of 8 lanes (4 a warp): 3 shuffle rounds"));
    // a row per block: the mean's and the squares' block reductions of 256 threads, and the
    // centred pass's round of two (rows far from zero), two barriers each, counted
    let block = check(&norm::layer_norm_f32::KERNEL, &options).unwrap();
    assert!(block.reductions.iter().all(|r| r.scope == ReductionScope::Block { threads: 256 } && r.barriers == 2));
    let rounds: Vec<_> = block.reductions.iter().map(|r| r.reduced_together).collect();
    assert_eq!((rounds, block.barriers), (vec![1, 1, 2], 6));
    let json: serde_json::Value = serde_json::from_str(&block.to_json()).unwrap();
    assert_eq!(json["reductions"][0]["scope"], serde_json::json!({ "block": { "threads": 256 } }));
    assert_eq!(json["reductions"][0]["shuffle_rounds"], 10);
    // Σx and Σx² in one round (2 barriers), and the exact pass's round (the deviations and
    // their squares) where they cancel
    let one_pass = check(&norm::layer_norm_bf16::KERNEL, &options).unwrap();
    let rounds: Vec<_> = one_pass.reductions.iter().map(|r| (r.reduced_together, r.barriers)).collect();
    assert_eq!((rounds, one_pass.barriers), (vec![(2, 2), (2, 2)], 4));
    assert!(one_pass.to_string().contains("reduce   2 × block_sum over the block's 256 threads in one round"));
    let json: serde_json::Value = serde_json::from_str(&one_pass.to_json()).unwrap();
    assert_eq!(json["reductions"][0]["reduced_together"], 2);
    // the round's line shows the calls as written
    assert_eq!(json["reductions"][0]["statement"], "block_sum(s), block_sum(q)");
}
