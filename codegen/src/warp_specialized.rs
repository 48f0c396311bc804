//! A pipeline with `producers = n`: the kernel becomes persistent and warp-specialised — a
//! warpgroup of producer threads issues every k-tile's cp.async copies (or, with
//! `copies = tma`, one of them its TMA bulk tensor copies) into the ring of stages, the block's own threads only wait, multiply and store (mbarriers between them, and
//! `setmaxnreg` moving registers to the compute threads).

use askama::Template;
use tessera_dsl::{Kernel, Operand, Statement};

use crate::statement::{indent, invalid, render_body, template_error};
use crate::{c_expr, RenderError};

#[derive(Template)]
#[template(path = "warp_specialized.cu", escape = "none")]
struct WarpSpecializedSource {
    dsl: String,
    stages: u32,
    producers: u32,
    /// Whether the producers are whole warpgroups, which hand registers over with setmaxnreg
    /// (a single producer warp cannot).
    hands_registers: bool,
    producer_registers: u32,
    compute_registers: u32,
    extents: Vec<(String, String)>,
    tiles: String,
    var: String,
    count: String,
    bindings: Vec<(String, String)>,
    declarations: Vec<String>,
    copies: Vec<String>,
    /// `copies = tma`: one producer thread issues `copies` as bulk tensor copies of
    /// `stage_bytes` a stage, through these tensor maps.
    tma: bool,
    stage_bytes: u32,
    tensor_maps: Vec<String>,
    /// Groups of compute threads taking tiles in turn (`consumers = n`; 1 without).
    consumers: u32,
    /// The compute threads' tile loop, rendered from `warp_specialized_consumer.cu`.
    consumer_loop: String,
}

#[derive(Template)]
#[template(path = "warp_specialized_consumer.cu", escape = "none")]
struct ConsumerLoopSource {
    consumers: u32,
    var: String,
    bindings: Vec<(String, String)>,
    fragment: String,
    compute: Vec<String>,
    /// Whether wgmma reads stages that cp.async wrote (through the async proxy, which TMA
    /// writes through itself).
    proxy_fence: bool,
    /// wgmma groups left running after each k-tile: its stage is freed a tile later.
    in_flight: u32,
    drain: Vec<String>,
    epilogue: Vec<String>,
}

/// Registers a producer thread keeps (`setmaxnreg.dec`): its loop needs a few pointers.
const PRODUCER_REGISTERS: u32 = 40;

/// What each of `threads` compute threads may take (`setmaxnreg.inc`) once `producers` threads
/// keep [`PRODUCER_REGISTERS`]: a block's share of the SM's 64 K registers (`blocks` blocks per
/// SM, `min_blocks`), in steps of 8, at most 256.
fn compute_registers(threads: u64, producers: u32, blocks: u32) -> u32 {
    let share = 65_536u64 / u64::from(blocks.max(1));
    let left = share.saturating_sub(u64::from(producers) * u64::from(PRODUCER_REGISTERS));
    let each = (left / threads.max(1)).min(256);
    (each - each % 8) as u32
}

/// The body of a kernel whose pipeline has producers (validation has checked its shape: the
/// grid, shared buffers, one fragment, the pipeline, then copies of the fragment out).
pub(crate) fn body(kernel: &Kernel, body: &[Statement]) -> Result<Vec<String>, RenderError> {
    let grid = body.iter().find_map(|s| match s {
        Statement::Grid(grid) => Some(grid),
        _ => None,
    });
    let pipeline = body.iter().find_map(|s| match s {
        Statement::Pipeline(p) => Some(p),
        _ => None,
    });
    let fragment = body.iter().find_map(|s| match s {
        Statement::Fragment(f) => Some(f),
        _ => None,
    });
    let (Some(grid), Some(pipeline), Some(fragment), Some(producers)) =
        (grid, pipeline, fragment, pipeline.and_then(|p| p.producers))
    else {
        return Err(invalid(
            kernel,
            kernel.origin,
            "a pipeline with producers needs a grid, a fragment and the pipeline",
        ));
    };
    let (extents, tiles) = crate::tiles::tile_counts(grid);
    let Some(bindings) = crate::tiles::tile_coordinates(grid) else {
        return Err(invalid(kernel, grid.origin, "a pipeline with producers takes a 1-D or 2-D grid"));
    };
    let parts = crate::gemm::async_pipeline_parts(kernel, pipeline, &crate::statement::base_env(kernel))?;
    let tma = kernel.copies_by_tma();
    let (copies, stage_bytes) = match tma {
        true => {
            let (blocks, bytes) = crate::tma::stage_copies(kernel, pipeline)?;
            (blocks.iter().map(|block| indent(block, 4)).collect(), bytes)
        }
        false => (parts.prologue.iter().map(|block| indent(block, 2)).collect(), 0),
    };
    // the compute threads' loop, its blocks indented relative to it
    let epilogue = body
        .iter()
        .filter(|s| matches!(s, Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_))))
        .map(|s| render_body(kernel, std::slice::from_ref(s), 1).map(|lines| lines.join("\n")))
        .collect::<Result<Vec<_>, _>>()?;
    let consumers = kernel.consumer_groups();
    let consumer_loop = ConsumerLoopSource {
        consumers,
        var: pipeline.var.clone(),
        bindings: bindings.clone(),
        fragment: indent(&crate::gemm::fragment_source(kernel, fragment)?, 1),
        compute: parts.compute.clone(),
        proxy_fence: crate::tensor_core::uses_wgmma(kernel) && !tma,
        in_flight: parts.in_flight,
        drain: parts.drain.clone(),
        epilogue,
    }
    .render()
    .map_err(template_error("warp_specialized_consumer.cu"))?;
    let copies_text = match tma {
        true => ", copies = tma",
        false => "",
    };
    let consumers_text = match consumers {
        1 => String::new(),
        n => format!(", consumers = {n}"),
    };
    let source = WarpSpecializedSource {
        dsl: format!("{grid} with `pipeline(.., producers = {producers}{copies_text}{consumers_text})`"),
        stages: pipeline.stages,
        producers,
        hands_registers: producers.is_multiple_of(128),
        producer_registers: PRODUCER_REGISTERS,
        compute_registers: compute_registers(
            kernel.config.threads.count(),
            producers,
            kernel.config.min_blocks.unwrap_or(1),
        ),
        extents,
        tiles,
        var: pipeline.var.clone(),
        count: c_expr(&pipeline.count),
        bindings,
        declarations: parts.declarations,
        copies,
        tma,
        stage_bytes,
        tensor_maps: kernel.tensor_maps().iter().map(|map| map.param()).collect(),
        consumers,
        consumer_loop: indent(consumer_loop.trim_matches('\n'), if consumers > 1 { 2 } else { 1 }),
    }
    .render()
    .map_err(template_error("warp_specialized.cu"))?;
    // shared buffers before it, as declared
    let shared: Vec<Statement> = body.iter().filter(|s| matches!(s, Statement::Shared(_))).cloned().collect();
    let mut lines = render_body(kernel, &shared, 1)?;
    lines.push(indent(&source, 1));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_threads_get_what_the_producers_give_back_in_steps_of_eight() {
        // 64 K − 128 × 40 = 60 416 registers over 256 threads: 236, so 232
        assert_eq!(compute_registers(256, 128, 1), 232);
        // never over setmaxnreg's 256
        assert_eq!(compute_registers(128, 128, 1), 256);
        // two blocks per SM: 32 K − 128 × 40 = 27 648 over 128 threads: 216
        assert_eq!(compute_registers(128, 128, 2), 216);
    }
}
