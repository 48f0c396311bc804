//! The SVG charts of `tessera bench --svg DIR`, drawn with plotters: a log-log roofline with
//! every GEMM row on it, and the % of baseline by shape of each family.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::BenchRow;

const SIZE: (u32, u32) = (860, 520);

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the {chart} chart: {message}")]
pub struct ChartError {
    pub chart: &'static str,
    pub message: String,
}

fn failed<E: std::fmt::Display>(chart: &'static str) -> impl Fn(E) -> ChartError {
    move |error| ChartError { chart, message: error.to_string() }
}

/// `items` without repeats, each where it first appears (the kernels or shapes of the rows).
fn first_seen<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A log-log roofline (TFLOP/s over FLOP/byte): the roof from `peak_tflops` and the copy's
/// `bandwidth_gbs`, and every GEMM row placed on it, one colour per kernel with a legend; the
/// memory-bound families do no arithmetic and are in the baseline charts instead.
///
/// ```
/// let svg = tessera::bench::roofline_svg(&[], 66.9, 4244.0).unwrap();
/// assert!(svg.starts_with("<svg") && svg.contains("FP32 peak 66.9 TFLOP/s"));
/// ```
pub fn roofline_svg(rows: &[BenchRow], peak_tflops: f64, bandwidth_gbs: f64) -> Result<String, ChartError> {
    let error = failed("roofline");
    let (x_min, x_max, y_min) = (0.1f64, 1000.0f64, 0.1f64);
    let y_max = (peak_tflops * 2.0).max(1.0);
    let gemm: Vec<&BenchRow> = rows.iter().filter(|r| r.unit == "TFLOP/s").collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(&error)?;
        let title = format!("Roofline: FP32 peak {peak_tflops:.1} TFLOP/s, copy bandwidth {bandwidth_gbs:.0} GB/s");
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..y_max).log_scale())
            .map_err(&error)?;
        chart.configure_mesh().x_desc("arithmetic intensity (FLOP/byte)").y_desc("TFLOP/s").draw().map_err(&error)?;
        let ridge = peak_tflops * 1e3 / bandwidth_gbs.max(1e-9);
        chart
            .draw_series(LineSeries::new(
                [(x_min, x_min * bandwidth_gbs / 1e3), (ridge, peak_tflops), (x_max, peak_tflops)],
                BLACK.stroke_width(2),
            ))
            .map_err(&error)?
            .label("roof")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK.stroke_width(2)));
        for (index, kernel) in first_seen(gemm.iter().map(|r| r.kernel.as_str())).into_iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let points =
                gemm.iter().filter(|r| r.kernel == kernel).map(|r| (r.intensity.max(x_min), r.value.max(y_min)));
            chart
                .draw_series(points.map(|point| Circle::new(point, 4, color.filled())))
                .map_err(&error)?
                .label(kernel)
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(&error)?;
        root.present().map_err(&error)?;
    }
    Ok(svg)
}

/// % of baseline by shape for one family: one line per kernel, the baseline's 100% dashed.
///
/// ```
/// let svg = tessera::bench::baseline_svg(&[], "copy").unwrap();
/// assert!(svg.contains("copy: % of baseline by shape"));
/// ```
pub fn baseline_svg(rows: &[BenchRow], family: &str) -> Result<String, ChartError> {
    let error = failed("baseline");
    let rows: Vec<&BenchRow> = rows.iter().filter(|r| r.family == family).collect();
    let shapes = first_seen(rows.iter().map(|r| r.shape.as_str()));
    let y_max = rows.iter().map(|r| r.percent_of_baseline).fold(100.0f64, f64::max).ceil() + 10.0;
    let baseline = rows.first().map_or("baseline", |r| r.baseline.as_str());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(&error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{family}: % of {baseline} by shape"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(110)
            .y_label_area_size(60)
            .build_cartesian_2d((0..shapes.len().max(1)).into_segmented(), 0.0..y_max)
            .map_err(&error)?;
        let shape_label = |value: &SegmentValue<usize>| match value {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => shapes.get(*i).unwrap_or(&"").to_string(),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(shapes.len().max(1))
            .x_label_formatter(&shape_label)
            .x_label_style(("sans-serif", 11).into_font().transform(FontTransform::Rotate90))
            .y_desc(format!("% of {baseline}"))
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .draw()
            .map_err(&error)?;
        chart
            .draw_series(DashedLineSeries::new(
                [(SegmentValue::Exact(0), 100.0), (SegmentValue::Last, 100.0)],
                6,
                4,
                BLACK.into(),
            ))
            .map_err(&error)?
            .label(format!("{baseline} = 100%"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK));
        for (index, kernel) in first_seen(rows.iter().map(|r| r.kernel.as_str())).into_iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let points: Vec<(SegmentValue<usize>, f64)> = shapes
                .iter()
                .enumerate()
                .filter_map(|(i, shape)| {
                    let row = rows.iter().find(|r| r.kernel == kernel && r.shape == *shape)?;
                    Some((SegmentValue::CenterOf(i), row.percent_of_baseline))
                })
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(&error)?
                .label(kernel)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(&error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(&error)?;
        root.present().map_err(&error)?;
    }
    Ok(svg)
}
