//! `tessera bench` without a GPU: argument parsing and every output format, from rows made up
//! for the purpose (the real runs are on the GPU machine, recorded in BENCHMARKS.md).

use clap::Parser;
use tessera::bench::{self, BenchOptions, BenchRow, Family, Output};
use tessera::cli::{Cli, Command};

fn row(family: &str, kernel: &str, shape: &str, value: f64, baseline: f64, unit: &str, intensity: f64) -> BenchRow {
    BenchRow {
        family: family.into(),
        kernel: kernel.into(),
        shape: shape.into(),
        median_ms: 1.0,
        min_ms: 0.9,
        max_ms: 1.2,
        value,
        unit: unit.into(),
        baseline: if unit == "GB/s" { "device copy".into() } else { "cuBLAS".into() },
        baseline_value: baseline,
        percent_of_baseline: 100.0 * value / baseline,
        intensity,
        roofline: baseline,
        percent_of_roofline: 100.0 * value / baseline,
        vector: 4,
        tuned: kernel.ends_with("v6"),
        host_ms: 0.0,
    }
}

fn rows() -> Vec<BenchRow> {
    vec![
        row("copy", "copy_f32x4", "N=268435456", 4240.0, 4244.0, "GB/s", 0.0),
        row("sgemm", "sgemm_v3", "M=4096,N=4096,K=4096", 41.7, 51.2, "TFLOP/s", 682.7),
        row("sgemm", "sgemm_v6", "M=4096,N=4096,K=4096", 43.9, 51.2, "TFLOP/s", 682.7),
        row("sgemm", "sgemm_v6", "M=1024,N=1024,K=1024", 26.7, 34.0, "TFLOP/s", 170.7),
    ]
}

fn parse(list: &[&str]) -> Result<BenchOptions, String> {
    let cli = Cli::try_parse_from(["tessera", "bench"].iter().chain(list)).map_err(|e| e.to_string())?;
    match cli.command {
        Command::Bench(args) => Ok(BenchOptions::from(args)),
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn arguments_select_families_sizes_and_the_output_format() {
    let options = parse(&[
        "transpose",
        "sgemm",
        "--sizes",
        "R=64,C=32;M=8,N=8,K=8",
        "--reps",
        "5",
        "--json",
        "--svg",
        "/tmp/charts",
        "--no-flush",
    ])
    .unwrap();
    assert_eq!(options.families, vec![Family::Transpose, Family::Sgemm]);
    let sizes = options.sizes.as_ref().unwrap();
    assert_eq!(sizes[0], vec![("R".to_string(), 64), ("C".to_string(), 32)]);
    assert_eq!(sizes[1].len(), 3);
    assert_eq!((options.repetitions, options.output, options.flush_l2), (5, Output::Json, false));
    assert_eq!(options.svg_dir.as_deref(), Some(std::path::Path::new("/tmp/charts")));
    let all = parse(&[]).unwrap();
    assert_eq!(all.families, Family::ALL.to_vec());
    assert_eq!((all.repetitions, all.warmup, all.sizes.is_none()), (20, 3, true));
    assert_eq!(parse(&["reduce", "map"]).unwrap().families, vec![Family::Reduce, Family::Map]);
    assert_eq!(parse(&["stencil"]).unwrap().families, vec![Family::Stencil]);
    assert_eq!(
        parse(&["softmax", "norm", "gemv"]).unwrap().families,
        vec![Family::Softmax, Family::Norm, Family::Gemv]
    );
    assert!(all.flush_l2 && all.output == Output::Table);
    assert_eq!(parse(&["--sizes", "N=8", "--sizes", "N=16", "--csv"]).unwrap().sizes.unwrap().len(), 2);
    // --kernels narrows the families to theirs when none is named (V12 is the epilogue
    // family's plain stream-K GEMM too)
    let two = parse(&["--kernels", "hgemm_v15_bf16,sgemm_v12"]).unwrap();
    assert_eq!(two.families, vec![Family::Sgemm, Family::Hgemm, Family::Epilogue]);
    assert_eq!(two.kernels, Some(vec!["hgemm_v15_bf16".to_string(), "sgemm_v12".to_string()]));
    assert_eq!(parse(&["hgemm", "--kernels", "sgemm_v12"]).unwrap().families, vec![Family::Hgemm]);
    assert_eq!(all.kernels, None);
}

#[test]
fn bad_arguments_are_errors_that_name_them() {
    let cases: [(&[&str], &str); 8] = [
        (&["--reps"], "--reps"),
        (&["--reps", "0"], "0 is not in 1.."),
        (&["--sizes", "N"], "`N` is not NAME=value"),
        (&["--sizes", "N=-3"], "N=-3: an extent is positive"),
        (&["dot"], "invalid value 'dot'"),
        (&["--json", "--csv"], "cannot be used with"),
        (&["--fast"], "unexpected argument '--fast'"),
        (&["--kernels", "hgemm_v99_bf16"], "no catalog kernel `hgemm_v99_bf16`"),
    ];
    for (bad, named) in cases {
        let error = parse(bad).unwrap_err();
        assert!(error.contains(named), "{bad:?}: `{error}` does not say {named}");
    }
}

#[test]
fn every_subcommand_answers_help() {
    for subcommand in ["list", "show", "check", "tune", "bench"] {
        for flag in ["--help", "-h"] {
            let error = Cli::try_parse_from(["tessera", subcommand, flag]).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::DisplayHelp, "{subcommand} {flag}");
            assert!(error.to_string().contains(&format!("Usage: tessera {subcommand}")), "{error}");
        }
    }
    let check = Cli::try_parse_from(["tessera", "check", "--help"]).unwrap_err().to_string();
    assert!(check.contains("\"occupancy_before_registers\""), "the long help carries the JSON schema");
}

#[test]
fn the_work_of_each_family_counts_bytes_and_flops() {
    let shape = |pairs: &[(&str, i64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
    assert_eq!(Family::Copy.work("copy_f32x4", &shape(&[("N", 1000)])), (0.0, 8000.0));
    assert_eq!(Family::Transpose.work("transpose_padded", &shape(&[("R", 10), ("C", 20)])), (0.0, 1600.0));
    assert_eq!(
        Family::Sgemm.work("sgemm_v3", &shape(&[("M", 2), ("N", 3), ("K", 4)])),
        (48.0, 4.0 * (8.0 + 12.0 + 6.0))
    );
    // a fused epilogue's GEMM reads the bias too; 2 bytes an element on bf16 and f16
    let gemm = shape(&[("M", 2), ("N", 3), ("K", 4)]);
    assert_eq!(Family::Epilogue.work("sgemm_bias_gelu", &gemm), (48.0, 4.0 * (8.0 + 12.0 + 6.0 + 3.0)));
    assert_eq!(Family::Epilogue.work("hgemm_bias_gelu_bf16", &gemm), (48.0, 2.0 * (8.0 + 12.0 + 6.0 + 3.0)));
    assert_eq!(Family::Reduce.work("dot_partials_f32", &shape(&[("N", 1000), ("P", 8)])), (0.0, 8032.0));
    assert_eq!(Family::Map.work("saxpy", &shape(&[("N", 1000)])), (0.0, 12000.0));
    // softmax reads x and writes y; LayerNorm also reads weight and bias; GEMV reads A once
    assert_eq!(Family::Softmax.work("softmax_block_f32", &shape(&[("R", 10), ("C", 20)])), (0.0, 1600.0));
    assert_eq!(Family::Norm.work("layer_norm_f32", &shape(&[("R", 10), ("C", 20)])), (0.0, 1760.0));
    assert_eq!(Family::Norm.work("rms_norm_f32", &shape(&[("R", 10), ("C", 20)])), (0.0, 1680.0));
    assert_eq!(Family::Gemv.work("gemv_f32", &shape(&[("M", 10), ("K", 20)])), (0.0, 920.0));
    // 16-bit rows move half the bytes; the softmax's chunk statistics stay f32
    assert_eq!(Family::Softmax.work("softmax_aligned_bf16", &shape(&[("R", 10), ("C", 20)])), (0.0, 800.0));
    assert_eq!(Family::Gemv.work("gemv_f16", &shape(&[("M", 10), ("K", 20)])), (0.0, 460.0));
    // the two-pass kernels: the chunked softmax's statistics (R × S maxima and sums) and the
    // row-split Aᵀ·x's S partial rows, written by pass 1 and read by pass 2
    let long_rows = shape(&[("R", 2), ("C", 100), ("S", 4)]);
    assert_eq!(Family::Softmax.work("softmax_chunk_stats_f32", &long_rows), (0.0, 800.0 + 64.0));
    assert_eq!(Family::Softmax.work("softmax_chunk_write_f32", &long_rows), (0.0, 1600.0 + 64.0));
    assert_eq!(Family::Softmax.work("softmax_chunk_write_bf16", &long_rows), (0.0, 800.0 + 64.0));
    let split = shape(&[("M", 10), ("N", 20), ("S", 4)]);
    assert_eq!(Family::Gemv.work("gemv_t_partials_f32", &split), (0.0, 4.0 * (200.0 + 10.0 + 20.0 + 80.0)));
    assert_eq!(Family::Gemv.work("gemv_t_finish_f32", &split), (0.0, 4.0 * (80.0 + 20.0)));
    // 16-bit A, x and y; the partials stay f32
    assert_eq!(Family::Gemv.work("gemv_t_partials_bf16", &split), (0.0, 2.0 * (200.0 + 10.0 + 20.0) + 4.0 * 80.0));
    assert_eq!(Family::Gemv.work("gemv_t_finish_f16", &split), (0.0, 4.0 * 80.0 + 2.0 * 20.0));
    let grid = shape(&[("R", 10), ("C", 20)]);
    assert_eq!(Family::Stencil.work("laplacian_5pt", &grid), (0.0, 1600.0));
    // one colour: half of f and of u read, half of u written
    assert_eq!(Family::Stencil.work("gauss_seidel_red_black", &grid), (0.0, 1200.0));
    assert_eq!(Family::Stencil.work("residual_partials", &shape(&[("R", 10), ("C", 20), ("P", 8)])), (0.0, 1632.0));
    // the colours stored apart, 10 × 10 each: the same colour's f and the other colour read, its own written
    let colours = shape(&[("R", 10), ("H", 10)]);
    assert_eq!(Family::Stencil.work("gauss_seidel_colour", &colours), (0.0, 1200.0));
    assert_eq!(Family::Stencil.work("split_red_black", &shape(&[("R", 10), ("C", 20), ("H", 10)])), (0.0, 1600.0));
}

#[test]
fn the_table_json_and_csv_carry_every_row() {
    let rows = rows();
    let table = bench::table(&rows);
    assert!(table.lines().next().unwrap().contains("of baseline"));
    assert!(table.contains("sgemm_v6 (tuned)") && table.contains("copy_f32x4"));
    let parsed: serde_json::Value = serde_json::from_str(&bench::json(&rows)).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 4);
    assert_eq!(parsed[1]["kernel"], "sgemm_v3");
    let csv = bench::csv(&rows);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines[0].starts_with("family,kernel,shape,median_ms"));
    assert_eq!(lines[0].split(',').count(), lines[2].split(',').count() - 2, "the quoted shape holds two commas");
}

/// A row whose launch kept the GPU waiting (for half the timed median or more, beyond the flush
/// before it) is marked and explained, as a regression of the launch path reads: a LayerNorm
/// launch that took 0.9 ms of host time was benched at 10% of the device copy.
#[test]
fn a_row_timed_while_the_gpu_waited_for_the_host_says_so() {
    let mut rows = rows();
    rows[0].median_ms = 0.95;
    rows[0].host_ms = 0.92;
    let table = bench::table(&rows);
    assert!(table.contains("copy_f32x4 (host)"), "{table}");
    assert!(
        table.contains("(host) copy_f32x4 at N=268435456: the GPU waited 920.0 µs of the 950.0 µs timed"),
        "{table}"
    );
    assert!(!table.contains("sgemm_v3 (host)"), "{table}");
    let csv = bench::csv(&rows);
    assert!(csv.lines().next().unwrap().ends_with(",host_ms"));
    assert!(csv.lines().nth(1).unwrap().ends_with(",0.920000"), "{csv}");
}

#[test]
fn the_charts_place_every_gemm_kernel_and_every_shape() {
    let rows = rows();
    let roofline = bench::roofline_svg(&rows, 66.9, 4244.0).unwrap();
    assert!(roofline.starts_with("<svg") && roofline.trim_end().ends_with("</svg>"));
    // three GEMM rows, and a dot in the legend for each of the two GEMM kernels
    assert_eq!(roofline.matches("<circle").count(), 3 + 2);
    assert!(roofline.contains(">\nsgemm_v6\n</text>") && roofline.contains(">\nsgemm_v3\n</text>"));
    assert!(!roofline.contains("copy_f32x4"), "copies do no arithmetic: they are not on the roofline");
    let by_size = bench::baseline_svg(&rows, "sgemm").unwrap();
    // one 2-pixel line per kernel, and its sample in the legend
    let lines = by_size.lines().filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\"")).count();
    assert_eq!(lines, 2 * 2, "{by_size}");
    assert!(by_size.contains(">\nsgemm_v6\n</text>") && by_size.contains(">\ncuBLAS = 100%\n</text>"));
    assert!(by_size.contains("M=1024,N=1024,K=1024") && by_size.contains("% of cuBLAS"));
    // sgemm_v6 at two shapes, sgemm_v3 at one
    assert_eq!(by_size.matches("<circle").count(), 3);
}
