//! `tessera check`: what a kernel's configuration costs before it runs — its resources per
//! block, how many blocks one SM keeps resident and what limits them, the least time the
//! work can take at a given shape (the roofline), and the static analysis of every access.
//!
//! Everything but the registers is arithmetic on the IR ([`tessera_dsl::Occupancy`],
//! [`tessera_dsl::roofline`], [`tessera_dsl::analyze`]); the registers come from compiling the
//! kernel with NVRTC for the chosen architecture, which needs no GPU. Without NVRTC the report
//! says so and gives the bounds that do not need registers.
//!
//! ```
//! use tessera::check::{check, CheckOptions};
//! let options = CheckOptions { nvrtc: false, ..CheckOptions::new(tessera::dsl::Target::SM_90) };
//! let report = check(&tessera::catalog::sgemm::sgemm_v3::KERNEL, &options).unwrap();
//! assert_eq!(report.occupancy.blocks_per_sm, 8); // 64 warps / 8 per block, before registers
//! assert!(report.to_string().contains("roofline at M=4096, K=4096, N=4096"));
//! ```

use serde::Serialize;
use tessera_dsl::{
    analyze, roofline, AccessReport, GpuSpec, Kernel, Limiter, Occupancy, Roofline, RooflineError, SharedSlot, Target,
};
use tessera_runtime::{nvrtc, Arch, DiskCache, KernelDefinition};

/// The value a shape symbol takes when `--shape` gives none: 4096 for a dimension of a
/// matrix, 2²⁴ for a vector's length.
pub const DEFAULT_MATRIX_EXTENT: i64 = 4096;
pub const DEFAULT_VECTOR_LENGTH: i64 = 1 << 24;

/// The JSON `tessera check --json` prints, for readers of `tessera check --help`.
pub const JSON_SCHEMA: &str = r#"JSON (numbers are plain JSON numbers; bytes in B, times in seconds, rates per second):
{
  "kernel": string, "config": string (the attribute as written), "arch": "sm_90",
  "threads_per_block": int, "warps_per_block": int,
  "shared_memory": { "bytes": int (the buffers), "reduction_bytes": int (the block reductions' warp
                     slots, static beside them), "dynamic": bool, "static_limit": int, "opt_in_limit": int,
                     "buffers": [ { "buffer": string, "offset": int, "stages": int, "stage_bytes": int } ] },
  "registers": null | { "per_thread": int, "spill_stores": int, "spill_loads": int,
                        "stack_frame_bytes": int, "from": "ptxas log" | "cubin", "nvrtc": "13.0" },
  "registers_unavailable": null | string (why: NVRTC missing, skipped, or the compile error),
  "occupancy_before_registers": OCCUPANCY, "occupancy": OCCUPANCY (with registers when known),
  "roofline": { "gpu": { "name": string, "compute_capability": int, "dram_bytes_per_second": num,
                         "fp32_flops_per_second": num, "fp64_flops_per_second": num },
                "shape": [[symbol, int], ..], "shape_defaults": [symbol, ..] (given no value),
                "grid": [int, ..], "blocks": int, "flops": num, "issued_bytes": num,
                "compulsory_bytes": num, "peak_flops_per_second": num, "compute_seconds": num,
                "memory_seconds": num, "issued_memory_seconds": num, "bound_seconds": num,
                "bound_by": "compute" | "memory", "intensity": num, "issued_intensity": num },
  "barriers": int (written, placed between stages, and the block reductions' two a round),
  "accesses": [ { "statement": string, "operand": string, "space": "global" | "shared",
                  "direction": "load" | "store", "width_bits": int, "instructions": int,
                  "bank_ways": null | int, "sectors": null | [per_request, ideal] } ],
  "reductions": [ { "statement": string, "function": "warp_sum" | "block_max" | ..,
                    "scope": { "lanes": int } | { "block": { "threads": int } } | "cluster",
                    "shuffle_rounds": int, "barriers": int,
                    "reduced_together": int (values one round reduces: consecutive block reductions share it) } ],
  "tma": [ { "statement": string, "tensor": string, "boxes": int, "row_slices": int, "box_rows": int,
             "box_cols": int, "box_bytes": int, "swizzle_bytes": int,
             "multicast": null | int (the blocks of a cluster it is multicast to),
             "store": bool (a `.by_tma()` copy out: each warp's boxes from its staging buffers) } ],
  "tile_schedule": null | string (how a persistent or stream-K grid's blocks take its tiles)
}
OCCUPANCY = { "target": "sm_90", "threads_per_block": int, "warps_per_block": int,
  "shared_bytes_per_block": int, "shared_bytes_allocated": int, "registers_per_thread": null | int,
  "registers_per_warp": null | int, "blocks_by_warps": int, "blocks_by_block_limit": int,
  "blocks_by_shared_memory": int, "blocks_by_registers": null | int, "blocks_per_sm": int,
  "warps_per_sm": int, "max_warps_per_sm": int,
  "limited_by": ["warps" | "blocks" | "shared_memory" | "registers", ..] }"#;

/// How to check a kernel.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    pub target: Target,
    /// Values of shape symbols; the others take the defaults.
    pub shape: Vec<(String, i64)>,
    /// The peaks of the roofline (default: the target's GPU in [`GpuSpec::KNOWN`]).
    pub gpu: Option<GpuSpec>,
    /// Compile with NVRTC for the registers.
    pub nvrtc: bool,
    /// Where compiled cubins are cached (`None`: always compile afresh).
    pub cache: Option<DiskCache>,
}

impl CheckOptions {
    /// Defaults for `target`: default shapes, its GPU, NVRTC with the default disk cache.
    pub fn new(target: Target) -> Self {
        Self { target, shape: Vec::new(), gpu: None, nvrtc: true, cache: DiskCache::default_location() }
    }
}

/// Why a kernel could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Runtime(#[from] tessera_runtime::Error),
    #[error("{0}")]
    Invalid(tessera_dsl::Diagnostics),
    #[error("roofline: {0}")]
    Roofline(#[from] RooflineError),
}

/// Shared memory of one block.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharedMemory {
    /// The buffers, every stage, aligned as laid out.
    pub bytes: i64,
    /// The warp slots of the block reductions, static beside the buffers.
    pub reduction_bytes: i64,
    pub dynamic: bool,
    /// The bytes of buffers declared statically: 48 KiB less what tessera keeps for its own
    /// variables ([`crate::dsl::RESERVED_STATIC_BYTES`]).
    pub static_limit: u32,
    pub opt_in_limit: u32,
    pub buffers: Vec<SharedSlot>,
}

/// What NVRTC's ptxas allocated for one thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Registers {
    pub per_thread: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_frame_bytes: u32,
    /// `ptxas log`, or `cubin` when NVRTC answered from its own cache and printed no figures.
    pub from: &'static str,
    /// The NVRTC version that compiled it, `13.0`.
    pub nvrtc: String,
}

/// The roofline with the shape symbols that took a default value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RooflineReport {
    #[serde(flatten)]
    pub roofline: Roofline,
    pub shape_defaults: Vec<String>,
    pub intensity: f64,
    pub issued_intensity: f64,
}

/// Everything `tessera check` reports; `Display` is the table, [`CheckReport::to_json`] the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    pub kernel: String,
    pub config: String,
    pub arch: String,
    pub threads_per_block: u64,
    pub warps_per_block: u32,
    pub shared_memory: SharedMemory,
    pub registers: Option<Registers>,
    pub registers_unavailable: Option<String>,
    pub occupancy_before_registers: Occupancy,
    pub occupancy: Occupancy,
    pub roofline: RooflineReport,
    pub barriers: usize,
    pub accesses: Vec<AccessReport>,
    /// The reductions thread code calls (`warp_sum(v, 8)`, `block_max(m)`, ..).
    pub reductions: Vec<tessera_dsl::ReductionReport>,
    /// The copies a TMA pipeline issues as boxes (`copies = tma`).
    pub tma: Vec<tessera_dsl::TmaCopyReport>,
    /// How the blocks of a persistent or stream-K grid take its tiles (`None`: one block a
    /// tile, the grid as launched).
    pub tile_schedule: Option<String>,
    /// The NVRTC log of the compile the registers came from.
    #[serde(skip)]
    pub nvrtc_log: Option<String>,
}

impl CheckReport {
    /// The report as one JSON object (the schema is [`JSON_SCHEMA`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// Checks `definition` as `options` say.
pub fn check(definition: &KernelDefinition, options: &CheckOptions) -> Result<CheckReport, CheckError> {
    let kernel = definition.ir()?;
    let analysis = analyze(kernel).map_err(CheckError::Invalid)?;
    let target = options.target;
    let shared = kernel.shared_memory();
    let threads = kernel.launch_threads();
    let before = Occupancy::new(&target, threads as u32, shared.block_bytes() as u32, None);

    let arch = Arch { major: target.compute_capability / 10, minor: target.compute_capability % 10 };
    let mut nvrtc_log = None;
    let (registers, registers_unavailable) = if !options.nvrtc {
        (None, Some("not compiled (--no-nvrtc)".to_string()))
    } else {
        match nvrtc::compile_cached(definition.cuda_source(), definition.name(), arch, options.cache.as_ref()) {
            Ok(compiled) => {
                let version = nvrtc::version().map(|(major, minor)| format!("{major}.{minor}")).unwrap_or_default();
                nvrtc_log = Some(compiled.log.clone());
                let p = compiled.ptxas;
                let registers = Registers {
                    per_thread: p.registers,
                    spill_stores: p.spill_stores,
                    spill_loads: p.spill_loads,
                    stack_frame_bytes: p.stack_frame_bytes,
                    from: if p.from_log { "ptxas log" } else { "cubin" },
                    nvrtc: version,
                };
                (Some(registers), None)
            }
            Err(tessera_runtime::Error::NvrtcMissing { .. }) => {
                (None, Some("NVRTC not found (libnvrtc is not on the library path): bounds without registers".into()))
            }
            Err(other) => (None, Some(format!("NVRTC could not compile it for {arch}: {other}"))),
        }
    };
    let occupancy =
        Occupancy::new(&target, threads as u32, shared.block_bytes() as u32, registers.as_ref().map(|r| r.per_thread));

    let (shape, shape_defaults) = full_shape(kernel, &options.shape);
    let gpu = options.gpu.unwrap_or_else(|| GpuSpec::default_for(&target));
    let roofline = roofline(kernel, &shape, &gpu)?;
    Ok(CheckReport {
        kernel: kernel.name.clone(),
        config: tessera_codegen::attribute_text(&kernel.config),
        arch: target.name(),
        threads_per_block: threads,
        warps_per_block: before.warps_per_block,
        shared_memory: SharedMemory {
            bytes: shared.bytes,
            reduction_bytes: shared.reduction_bytes,
            dynamic: shared.dynamic,
            // the reductions' warp slots are static beside the buffers
            static_limit: crate::dsl::SharedMemoryPlan::static_buffer_limit(&target)
                .saturating_sub(u32::try_from(shared.reduction_bytes).unwrap_or(u32::MAX)),
            opt_in_limit: target.opt_in_shared_memory_bytes,
            buffers: shared.slots,
        },
        registers,
        registers_unavailable,
        occupancy_before_registers: before,
        occupancy,
        roofline: RooflineReport {
            intensity: roofline.intensity(),
            issued_intensity: roofline.issued_intensity(),
            roofline,
            shape_defaults,
        },
        barriers: analysis.barriers,
        accesses: analysis.accesses,
        reductions: analysis.reductions,
        tma: analysis.tma,
        tile_schedule: tile_schedule(kernel),
        nvrtc_log,
    })
}

/// How a grid that is not launched a block a tile takes its tiles, in words.
fn tile_schedule(kernel: &crate::dsl::Kernel) -> Option<String> {
    use crate::dsl::GridMapping;
    match kernel.grid_mapping()? {
        GridMapping::StreamK { .. } => {
            Some("stream-K: the blocks resident at once share the tiles' k loops, a block's share crossing tiles".into())
        }
        GridMapping::Persistent { .. } => Some(match kernel.cluster_tiles() {
            Some(cluster) => format!(
                "persistent, in clusters of {blocks}: each cluster of resident blocks takes {blocks} neighbouring tiles along {axis} at a time, block r the r-th ({shared} multicast)",
                blocks = cluster.blocks,
                axis = ['x', 'y'][cluster.axis],
                shared = {
                    let names: Vec<String> = kernel
                        .pipeline_tile_copies()
                        .filter(|copy| kernel.multicasts(copy))
                        .map(|copy| match &copy.src {
                            crate::dsl::Operand::Global(tile) => format!("{}'s tile", tile.tensor),
                            _ => copy.to_string(),
                        })
                        .collect();
                    if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
                }
            ),
            None => {
                let grid = kernel.grid();
                let order = match grid.map(|g| (g.zigzag, g.dynamic)) {
                    Some((_, true)) => "take each next tile from a counter as they finish one (`.dynamic()`)",
                    Some((true, _)) => "take the tiles in turn, every other round from its end (`.zigzag()`)",
                    _ => "take the tiles in turn",
                };
                let groups = match grid.and_then(|g| g.grouped) {
                    Some(rows) => format!(", in groups of {rows} rows of tiles down their columns"),
                    None => String::new(),
                };
                format!("persistent: the blocks resident at once {order}{groups}")
            }
        }),
        _ => None,
    }
}

/// `given` completed with defaults for every other shape symbol (which are listed too).
/// Symbols `given` names that the kernel lacks are kept, for the roofline to report.
fn full_shape(kernel: &Kernel, given: &[(String, i64)]) -> (Vec<(String, i64)>, Vec<String>) {
    let mut shape = given.to_vec();
    let mut defaults = Vec::new();
    for symbol in kernel.shape_symbols() {
        if given.iter().any(|(s, _)| s == symbol) {
            continue;
        }
        let in_matrix = kernel
            .params
            .iter()
            .filter_map(|p| p.tensor())
            .any(|t| t.rank() >= 2 && t.shape.iter().any(|(s, _)| s == symbol));
        let value = if in_matrix { DEFAULT_MATRIX_EXTENT } else { DEFAULT_VECTOR_LENGTH };
        shape.push((symbol.to_string(), value));
        defaults.push(symbol.to_string());
    }
    // In the kernel's symbol order, for the output.
    let order = kernel.shape_symbols();
    shape.sort_by_key(|(s, _)| order.iter().position(|o| o == s).unwrap_or(usize::MAX));
    (shape, defaults)
}

/// 16384 → "16384 B", 66560 → "66560 B (65.0 KiB)".
fn bytes(value: i64) -> String {
    if value >= 1024 {
        format!("{value} B ({:.1} KiB)", value as f64 / 1024.0)
    } else {
        format!("{value} B")
    }
}

/// A quantity with an SI prefix: 1.37e11 → "137.4 G".
fn si(value: f64) -> String {
    let (scaled, prefix) = match value.abs() {
        v if v >= 1e12 => (value / 1e12, "T"),
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    format!("{scaled:.1} {prefix}")
}

fn seconds(value: f64) -> String {
    match value {
        v if v >= 1.0 => format!("{v:.3} s"),
        v if v >= 1e-3 => format!("{:.3} ms", v * 1e3),
        v => format!("{:.2} µs", v * 1e6),
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const LABEL: usize = 22;
        let row = |f: &mut std::fmt::Formatter<'_>, label: &str, value: String| -> std::fmt::Result {
            writeln!(f, "  {label:<LABEL$}{value}")
        };
        writeln!(f, "{} on {}: {}", self.kernel, self.arch, self.config)?;
        writeln!(f)?;
        writeln!(f, "resources per block")?;
        row(f, "threads", format!("{} ({} warps)", self.threads_per_block, self.warps_per_block))?;
        let s = &self.shared_memory;
        let kind = if s.dynamic {
            format!("dynamic, over the {} B of static buffers; {} B with opt-in", s.static_limit, s.opt_in_limit)
        } else {
            format!("static (buffers to {} B; {} B with opt-in)", s.static_limit, s.opt_in_limit)
        };
        let held = if s.reduction_bytes > 0 {
            format!("{} of buffers + {} B of the block reductions' warp slots", bytes(s.bytes), s.reduction_bytes)
        } else {
            bytes(s.bytes)
        };
        row(f, "shared memory", format!("{held}, {kind}"))?;
        match (&self.registers, &self.registers_unavailable) {
            (Some(r), _) => {
                let spills = if r.spill_stores + r.spill_loads == 0 && r.stack_frame_bytes == 0 {
                    "no spills".to_string()
                } else {
                    format!(
                        "{} B spill stores, {} B spill loads, {} B stack",
                        r.spill_stores, r.spill_loads, r.stack_frame_bytes
                    )
                };
                row(
                    f,
                    "registers",
                    format!(
                        "{} per thread, {spills} (NVRTC {} for {}, from the {})",
                        r.per_thread, r.nvrtc, self.arch, r.from
                    ),
                )?;
            }
            (None, Some(why)) => row(f, "registers", format!("unknown: {why}"))?,
            (None, None) => row(f, "registers", "unknown".into())?,
        }

        let o = &self.occupancy;
        const LIMIT: usize = 36;
        writeln!(f)?;
        writeln!(f, "{:<width$}blocks", format!("occupancy per SM on {}", self.arch), width = LIMIT + 2)?;
        let limit_row = |f: &mut std::fmt::Formatter<'_>, label: String, blocks: Option<u32>, limiter| {
            let marker = if o.limited_by.contains(&limiter) { "  ← limit" } else { "" };
            let blocks = blocks.map_or("?".to_string(), |b| b.to_string());
            writeln!(f, "  {label:<LIMIT$}{blocks:>6}{marker}")
        };
        limit_row(f, format!("warp slots ({} warps)", o.max_warps_per_sm), Some(o.blocks_by_warps), Limiter::Warps)?;
        limit_row(
            f,
            format!("block slots ({})", o.blocks_by_block_limit),
            Some(o.blocks_by_block_limit),
            Limiter::Blocks,
        )?;
        limit_row(
            f,
            format!("shared memory ({} B per block)", o.shared_bytes_allocated),
            Some(o.blocks_by_shared_memory),
            Limiter::SharedMemory,
        )?;
        let register_label = match o.registers_per_warp {
            Some(per_warp) => format!("registers ({per_warp} per warp)"),
            None => "registers (not known)".to_string(),
        };
        limit_row(f, register_label, o.blocks_by_registers, Limiter::Registers)?;
        writeln!(
            f,
            "  {:<LIMIT$}{:>6}  blocks, {} warps: {:.0}% of {}, limited by {}{}",
            "resident",
            o.blocks_per_sm,
            o.warps_per_sm,
            o.fraction() * 100.0,
            o.max_warps_per_sm,
            o.limited_by_text(),
            if o.registers_per_thread.is_none() { " (an upper bound: registers can only lower it)" } else { "" }
        )?;

        let r = &self.roofline.roofline;
        let shape: Vec<String> = r.shape.iter().map(|(s, v)| format!("{s}={v}")).collect();
        writeln!(f)?;
        writeln!(
            f,
            "roofline at {} on {} ({:.2} TB/s DRAM, {:.1} TFLOP/s: data-sheet peaks, assumed)",
            shape.join(", "),
            r.gpu.name,
            r.gpu.dram_bytes_per_second / 1e12,
            r.peak_flops_per_second / 1e12
        )?;
        if !self.roofline.shape_defaults.is_empty() {
            row(
                f,
                "",
                format!("(default extents for {}; set them with --shape)", self.roofline.shape_defaults.join(", ")),
            )?;
        }
        let grid: Vec<String> = r.grid.iter().map(i64::to_string).collect();
        let unit = if self.tile_schedule.is_some() { "tiles" } else { "blocks" };
        if grid.len() > 1 {
            row(f, "grid", format!("{} = {} {unit}", grid.join(" × "), r.blocks))?;
        } else {
            row(f, "grid", format!("{} {unit}", r.blocks))?;
        }
        if let Some(schedule) = &self.tile_schedule {
            row(f, "", schedule.clone())?;
        }
        if r.flops > 0.0 {
            row(f, "FLOPs", format!("{}FLOP (2 per multiply-add of mma)", si(r.flops)))?;
        } else {
            row(f, "FLOPs", "0 (no mma)".into())?;
        }
        row(f, "global traffic", format!("{}B compulsory (each tensor once)", si(r.compulsory_bytes)))?;
        row(f, "", format!("{}B as issued (every tile load and store, no cache reuse)", si(r.issued_bytes)))?;
        row(
            f,
            "intensity",
            format!(
                "{:.2} FLOP/B compulsory, {:.2} FLOP/B issued",
                self.roofline.intensity, self.roofline.issued_intensity
            ),
        )?;
        row(f, "time bound", format!("≥ {}, {}-bound", seconds(r.bound_seconds), r.bound_by))?;
        row(
            f,
            "",
            format!(
                "compute {}, memory {} ({} if every issued byte came from DRAM)",
                seconds(r.compute_seconds),
                seconds(r.memory_seconds),
                seconds(r.issued_memory_seconds)
            ),
        )?;

        writeln!(f)?;
        writeln!(f, "static analysis: {} barrier{}", self.barriers, if self.barriers == 1 { "" } else { "s" })?;
        let analysis = tessera_dsl::Report {
            kernel: String::new(),
            threads: 0,
            vector: 0,
            shared_bytes: 0,
            reduction_shared_bytes: 0,
            dynamic_shared: false,
            barriers: 0,
            accesses: self.accesses.clone(),
            reductions: self.reductions.clone(),
            tma: self.tma.clone(),
            occupancy: vec![],
        };
        // The report's table without its first line (already said above).
        for line in analysis.to_string().lines().skip(1) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
