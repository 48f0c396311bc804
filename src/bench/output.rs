//! The rows as a text table, JSON or CSV.

use super::*;

/// An aligned text table.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:<32} {:<24} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}",
        "family", "kernel", "shape", "median ms", "spread %", "value", "of baseline", "of roof", "baseline"
    );
    for row in rows {
        let spread = if row.median_ms > 0.0 { 100.0 * (row.max_ms - row.min_ms) / row.median_ms } else { 0.0 };
        let mut name = if row.tuned { format!("{} (tuned)", row.kernel) } else { row.kernel.clone() };
        if row.waited_for_host() {
            name.push_str(" (host)");
        }
        let _ = writeln!(
            out,
            "{:<10} {:<32} {:<24} {:>9.3} {:>9.1} {:>9.1} {:>10.1}% {:>8.1}% {:>9}",
            row.family,
            name,
            row.shape,
            row.median_ms,
            spread,
            row.value,
            row.percent_of_baseline,
            row.percent_of_roofline,
            row.baseline
        );
    }
    if let Some(first) = rows.first() {
        let _ = writeln!(
            out,
            "values in GB/s of compulsory traffic (read + written) for copy, transpose, reduce, map and stencil, TFLOP/s for sgemm and hgemm (whose roof is the dense tensor-core peak); \
             first baseline: {} at {:.1} {}",
            first.baseline, first.baseline_value, first.unit
        );
    }
    for row in rows.iter().filter(|row| row.waited_for_host()) {
        let _ = writeln!(
            out,
            "(host) {} at {}: the GPU waited {:.1} µs of the {:.1} µs timed for the launch's host side (beyond the flush before it): the figure is the launch path's",
            row.kernel,
            row.shape,
            1e3 * row.host_ms,
            1e3 * row.median_ms
        );
    }
    out
}

/// The rows as a JSON array of objects (the fields of [`BenchRow`]).
pub fn json(rows: &[BenchRow]) -> String {
    serde_json::to_string_pretty(rows).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break — a shape
/// `M=4096,N=4096`, an entry point `attention::backward (bf16, causal)` — its quotes doubled.
///
/// ```
/// assert_eq!(tessera::bench::csv_field("M=1,N=2"), "\"M=1,N=2\"");
/// assert_eq!(tessera::bench::csv_field("sgemm_v13"), "sgemm_v13");
/// ```
pub fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

/// The rows as CSV with a header line.
pub fn csv(rows: &[BenchRow]) -> String {
    let mut out = String::from("family,kernel,shape,median_ms,min_ms,max_ms,value,unit,baseline,baseline_value,percent_of_baseline,intensity,roofline,percent_of_roofline,vector,tuned,host_ms\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{:.6},{:.6},{:.6},{:.3},{},{},{:.3},{:.2},{:.4},{:.3},{:.2},{},{},{:.6}",
            csv_field(&r.family),
            csv_field(&r.kernel),
            csv_field(&r.shape),
            r.median_ms,
            r.min_ms,
            r.max_ms,
            r.value,
            csv_field(&r.unit),
            csv_field(&r.baseline),
            r.baseline_value,
            r.percent_of_baseline,
            r.intensity,
            r.roofline,
            r.percent_of_roofline,
            r.vector,
            r.tuned,
            r.host_ms
        );
    }
    out
}
