//! A pipeline with `producers = n`: the kernel becomes persistent and warp-specialised — a
//! warpgroup of producer threads issues every k-tile's cp.async copies (or, with
//! `copies = tma`, one of them its TMA bulk tensor copies) into the ring of stages, and each
//! tile's own copies (those before the pipeline) once a tile; the block's own threads only
//! wait, compute and store (mbarriers between them, and `setmaxnreg` moving registers to the
//! compute threads).

use askama::Template;
use tessera_dsl::{Kernel, Statement, TileBuffersFreed, TileCopy};

use crate::statement::{absent_parts, indent, invalid, render_body, render_scoped, template_error};
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
    /// The copies of each tile's own buffers (before the pipeline), and the bytes TMA lands.
    tile_copies: Vec<String>,
    tile_bytes: u32,
    tensor_maps: Vec<String>,
    /// Groups of compute threads taking tiles in turn (`consumers = n`; 1 without).
    consumers: u32,
    /// The compute threads' tile loop, rendered from `warp_specialized_consumer.cu`.
    consumer_loop: String,
    /// `cluster = ..`: the blocks of a cluster, which take one cluster tile together.
    cluster_blocks: Option<u32>,
    /// The first tile a block (or its cluster) takes, and the step to its next.
    first_tile: String,
    tile_step: String,
    /// The tile loop's variable: `tile`, or `turn` where `.zigzag()` computes the tile from it.
    turn: &'static str,
    /// `.dynamic()`: a producer takes each next tile from the launch's counter and hands it to
    /// the block's other warps through two shared slots, which `slot_readers` warps read.
    dynamic: bool,
    slot_readers: String,
    tile_give: &'static str,
    tile_take: &'static str,
}

#[derive(Template)]
#[template(path = "warp_specialized_consumer.cu", escape = "none")]
struct ConsumerLoopSource {
    consumers: u32,
    var: String,
    count: String,
    bindings: Vec<(String, String)>,
    /// The statements before the pipeline: fragments, thread code, the wait for the tile's
    /// own copies.
    before: Vec<String>,
    compute: Vec<String>,
    /// Declared before the k loop: a `.deferred()` product's A registers.
    loop_declarations: Vec<String>,
    /// Whether wgmma reads stages that cp.async wrote (through the async proxy, which TMA
    /// writes through itself).
    proxy_fence: bool,
    /// wgmma groups left running after each k-tile: its stage is freed a tile later.
    in_flight: u32,
    drain: Vec<String>,
    /// The statements after it: thread code and the fragments' copies out.
    after: Vec<String>,
    /// Whether the tile has copies of its own, whose buffers go back to the producers ...
    tile_copies: bool,
    /// ... where [`Kernel::tile_buffers_freed`] says: "after_loop", "after_drain" or
    /// "at_tile_end".
    tile_freed: &'static str,
    /// In a cluster, a stage is freed in every block of it (their producers multicast into it).
    cluster: bool,
    first_tile: String,
    tile_step: String,
    turn: &'static str,
    dynamic: bool,
    tile_take: &'static str,
    /// A `.by_tma()` copy out: the warp counts its TMA stores (which staging buffer is next)
    /// and waits for them before it exits.
    tma_store: bool,
}

/// `.dynamic()`: the producer that takes the tiles hands each over in a shared slot ...
const TILE_GIVE: &str = include_str!("../templates/dynamic_tile_give.cu");
/// ... which every warp that needs it reads.
const TILE_TAKE: &str = include_str!("../templates/dynamic_tile_take.cu");

/// Registers a producer thread keeps (`setmaxnreg.dec`): its loop needs a few pointers.
const PRODUCER_REGISTERS: u32 = 40;

/// What each of `threads` compute threads may take (`setmaxnreg.inc`) once `producers` threads
/// keep [`PRODUCER_REGISTERS`], `blocks` blocks an SM (`min_blocks`): every warp starts with the
/// launch bound's share of the SM's 64 K registers, in steps of 8, and a block's compute warps
/// can only take what its own producers gave back — `setmaxnreg.inc` waits for registers
/// released in its block, so asking for more (the SM's spare ones do not count) hangs it.
fn compute_registers(threads: u64, producers: u32, blocks: u32) -> u32 {
    let at_entry = registers_at_entry(threads, producers, blocks);
    let kept = u64::from(producer_registers(threads, producers, blocks));
    let given_back = u64::from(producers) * (at_entry - kept);
    let each = (at_entry + given_back / threads.max(1)).min(256);
    (each - each % 8) as u32
}

/// The registers every thread starts with: the launch bound's share of the SM's 64 K, in steps
/// of 8, at most 255 (what ptxas allocates for `__launch_bounds__(threads, blocks)`).
fn registers_at_entry(threads: u64, producers: u32, blocks: u32) -> u64 {
    let block_threads = threads + u64::from(producers);
    let at_entry = (65_536 / (block_threads.max(1) * u64::from(blocks.max(1)))).min(255);
    at_entry - at_entry % 8
}

/// What a producer keeps (`setmaxnreg.dec`): [`PRODUCER_REGISTERS`], or what it started with
/// when that is less (many blocks an SM).
fn producer_registers(threads: u64, producers: u32, blocks: u32) -> u32 {
    registers_at_entry(threads, producers, blocks).min(u64::from(PRODUCER_REGISTERS)) as u32
}

/// The body of a kernel whose pipeline has producers (validation has checked its shape: the
/// grid, shared buffers, fragments, thread code and the tile's own copies into shared buffers,
/// the pipeline, then thread code and copies of fragments out).
pub(crate) fn body(kernel: &Kernel, body: &[Statement]) -> Result<Vec<String>, RenderError> {
    let pipeline = body.iter().enumerate().find_map(|(index, s)| match s {
        Statement::Pipeline(p) if p.producers.is_some() => Some((index, p)),
        _ => None,
    });
    let grid = body.iter().find_map(|s| match s {
        Statement::Grid(grid) => Some(grid),
        _ => None,
    });
    let (Some(grid), Some((index, pipeline))) = (grid, pipeline) else {
        let missing = absent_parts(&[(grid.is_some(), "grid"), (pipeline.is_some(), "pipeline with producers")]);
        let message = format!(
            "a kernel whose pipeline has producers has a grid and that pipeline in its body; this one has {missing}"
        );
        return Err(invalid(kernel, kernel.origin, &message));
    };
    let producers = pipeline.producers.unwrap_or(0);
    let (before, after) = (&body[..index], &body[index + 1..]);
    let (mut extents, tiles) = crate::tiles::tile_counts(grid);
    let Some(mut bindings) = crate::tiles::tile_coordinates(grid) else {
        let message = format!(
            "a pipeline with producers takes a 1-D, 2-D or 3-D grid (a 2-D one when grouped), not the {}-D `{grid}`",
            grid.vars.len()
        );
        return Err(invalid(kernel, grid.origin, &message));
    };
    // in clusters the blocks walk cluster tiles, block r of a cluster taking the r-th tile of
    // one along the clustered axis
    let cluster = kernel.cluster_tiles();
    let (first_tile, tile_step) = match cluster {
        Some(cluster) => {
            let Some((_, extent)) = extents.get_mut(cluster.axis) else {
                let axis = match cluster.axis {
                    0 => "x",
                    1 => "y",
                    _ => "z",
                };
                let message = format!(
                    "a cluster of {} blocks along the grid's {axis} axis, which the {}-D `{grid}` does not have",
                    cluster.blocks,
                    extents.len()
                );
                return Err(invalid(kernel, grid.origin, &message));
            };
            *extent = format!("({extent} + CLUSTER_BLOCKS - 1) / CLUSTER_BLOCKS");
            let var = &grid.vars[cluster.axis];
            let cluster_var = format!("cluster_{var}");
            for (name, _) in bindings.iter_mut().filter(|(name, _)| name == var) {
                name.clone_from(&cluster_var);
            }
            bindings.push((var.clone(), format!("{cluster_var} * CLUSTER_BLOCKS + cluster_rank")));
            ("blockIdx.x / CLUSTER_BLOCKS".to_string(), "gridDim.x / CLUSTER_BLOCKS".to_string())
        }
        None => ("blockIdx.x".to_string(), "gridDim.x".to_string()),
    };
    let turn = match grid.zigzag {
        true => {
            bindings.insert(0, ("tile".into(), crate::tiles::zigzag_tile("turn", &first_tile, &tile_step)));
            "turn"
        }
        false => "tile",
    };
    let tma = kernel.copies_by_tma();
    let wgmma = crate::tensor_core::uses_wgmma(kernel);
    // the tile's own copies (before the pipeline: FlashAttention's Q), issued by the producers
    // once a tile onto an mbarrier of their own
    let tile_copies = kernel.producer_tile_copies();
    let (tile_copy_blocks, tile_bytes) = tile_copy_sources(kernel, &tile_copies, tma)?;
    // the compute threads' statements before the loop, in order, the locals they declare kept
    // for the loop and what follows it
    let mut env = tessera_dsl::TypeEnv::of_kernel_body(kernel);
    let mut before_blocks = Vec::new();
    let mut waited = false;
    for statement in before {
        match statement {
            Statement::Grid(_) | Statement::Shared(_) => {}
            Statement::Copy(_) if waited => {}
            Statement::Copy(_) => {
                waited = true;
                let names: Vec<String> = tile_copies.iter().map(|copy| copy.dst.name().to_string()).collect();
                let mut lines = vec![
                    format!("// {}: the producers' copies of this tile have landed", names.join(", ")),
                    "tessera_mbarrier_wait(&tessera_tile_full, tiles_done & 1);".to_string(),
                ];
                if wgmma && !tma {
                    lines.push(
                        "tessera_fence_proxy_async();  // visible to wgmma, which reads through the async proxy".into(),
                    );
                }
                before_blocks.push(lines.join("\n"));
            }
            Statement::Fragment(fragment) => before_blocks.push(crate::gemm::fragment_source(kernel, fragment)?),
            other => before_blocks.extend(render_scoped(kernel, std::slice::from_ref(other), 0, &mut env)?),
        }
    }
    let parts = crate::gemm::async_pipeline_parts(kernel, pipeline, &env)?;
    let (copies, stage_bytes) = match tma {
        true => {
            let (blocks, bytes) = crate::tma::stage_copies(kernel, pipeline)?;
            (blocks.iter().map(|block| indent(block, 4)).collect(), bytes)
        }
        false => (parts.prologue.iter().map(|block| indent(block, 2)).collect(), 0),
    };
    let after_blocks = render_scoped(kernel, after, 0, &mut env)?;
    let consumers = kernel.consumer_groups();
    let consumer_loop = ConsumerLoopSource {
        consumers,
        var: pipeline.var.clone(),
        count: c_expr(&pipeline.count),
        bindings: bindings.clone(),
        before: before_blocks.iter().map(|block| indent(block, 1)).collect(),
        compute: parts.compute.clone(),
        loop_declarations: parts.loop_declarations.clone(),
        proxy_fence: wgmma && !tma,
        in_flight: parts.in_flight,
        drain: parts.drain.clone(),
        after: after_blocks.iter().map(|block| indent(block, 1)).collect(),
        tile_copies: !tile_copies.is_empty(),
        tile_freed: match kernel.tile_buffers_freed() {
            Some(TileBuffersFreed::AfterLoop) => "after_loop",
            Some(TileBuffersFreed::AfterDrain) => "after_drain",
            Some(TileBuffersFreed::AtTileEnd) | None => "at_tile_end",
        },
        cluster: cluster.is_some(),
        first_tile: first_tile.clone(),
        tile_step: tile_step.clone(),
        turn,
        dynamic: grid.dynamic,
        tile_take: TILE_TAKE.trim_end(),
        tma_store: kernel.tma_store_copy().is_some(),
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
    let cluster_text = match kernel.config.cluster_text() {
        Some(text) => format!(" in clusters ({text})"),
        None => String::new(),
    };
    let source = WarpSpecializedSource {
        dsl: format!("{grid} with `pipeline(.., producers = {producers}{copies_text}{consumers_text})`{cluster_text}"),
        stages: pipeline.stages,
        producers,
        hands_registers: producers.is_multiple_of(128),
        producer_registers: producer_registers(
            kernel.config.threads.count(),
            producers,
            kernel.config.min_blocks.unwrap_or(1),
        ),
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
        tile_copies: tile_copy_blocks,
        tile_bytes,
        tensor_maps: kernel.tensor_maps().iter().map(|map| map.param()).collect(),
        consumers,
        consumer_loop: indent(consumer_loop.trim_matches('\n'), if consumers > 1 { 2 } else { 1 }),
        cluster_blocks: cluster.map(|cluster| cluster.blocks),
        first_tile,
        tile_step,
        turn,
        dynamic: grid.dynamic,
        slot_readers: match tma {
            true => "THREADS / 32".into(), // the compute warps (the producer that takes the tiles knows them)
            false => "(THREADS + PRODUCERS) / 32".into(), // and the producers' warps
        },
        tile_give: TILE_GIVE.trim_end(),
        tile_take: TILE_TAKE.trim_end(),
    }
    .render()
    .map_err(template_error("warp_specialized.cu"))?;
    // shared buffers before it, as declared
    let shared: Vec<Statement> = body.iter().filter(|s| matches!(s, Statement::Shared(_))).cloned().collect();
    let mut lines = render_body(kernel, &shared, 1)?;
    if let Some(staging) = tma_store_staging(kernel) {
        lines.push(indent(&staging, 1));
    }
    lines.push(indent(&source, 1));
    Ok(lines)
}

/// The compute warps' staging buffers of a `.by_tma()` copy out: two of 16 rows × 128 bytes
/// a warp, 1024-byte aligned for the swizzle, carved out of dynamic shared memory or static.
fn tma_store_staging(kernel: &Kernel) -> Option<String> {
    kernel.tma_store_copy()?;
    let plan = kernel.shared_memory();
    let slot = plan.slot(tessera_dsl::TMA_STORE_STAGING)?;
    let warps = kernel.config.threads.count() / 32;
    let stage = tessera_dsl::TMA_STORE_STAGE_BYTES;
    let name = tessera_dsl::TMA_STORE_STAGING;
    let comment =
        format!("// `.by_tma()`: each compute warp's two staging buffers of 16 rows × 128 bytes ({} B)", slot.bytes());
    Some(match plan.dynamic {
        true => format!(
            "{comment}, bytes {} to {} of tessera_smem\nunsigned char (&{name})[{warps}][2][{stage}] = *reinterpret_cast<unsigned char (*)[{warps}][2][{stage}]>(tessera_smem + {});",
            slot.offset,
            slot.offset + slot.bytes(),
            slot.offset
        ),
        false => format!("{comment}\n__shared__ __align__(1024) unsigned char {name}[{warps}][2][{stage}];"),
    })
}

/// The producers' copies of a tile's own buffers (the copies before the pipeline), each block
/// indented for the producer loop, and the bytes TMA lands of them (0 with cp.async).
fn tile_copy_sources(kernel: &Kernel, copies: &[&TileCopy], tma: bool) -> Result<(Vec<String>, u32), RenderError> {
    if tma {
        // in the producer's tile loop
        let (blocks, bytes) = crate::tma::tile_copies(kernel, copies)?;
        return Ok((blocks.iter().map(|block| indent(block, 3)).collect(), bytes));
    }
    let scope = kernel.constant_scope();
    let blocks = copies
        .iter()
        .map(|copy| {
            let plan =
                tessera_dsl::CopyPlan::new(kernel, copy, &scope).map_err(crate::statement::invalid_plan(kernel))?;
            let block = crate::gemm::async_copy_source(kernel, copy, &plan, "this tile's", None)?;
            // in the loop that gives each producer the copies of several compute threads
            Ok(indent(&block, 4))
        })
        .collect::<Result<Vec<_>, RenderError>>()?;
    Ok((blocks, 0))
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
        // two blocks per SM: 128 each at entry, the producers' 88 × 128 to 128 threads: 216
        assert_eq!(compute_registers(128, 128, 2), 216);
        // three: 85 at entry is 80, and the producers give back 40 × 128 — 120, not the 128
        // that the SM's spare registers would allow (that waited forever on an H200)
        assert_eq!(compute_registers(128, 128, 3), 120);
        assert_eq!(compute_registers(128, 128, 4), 88);
    }

    #[test]
    fn a_block_never_asks_for_more_registers_than_its_producers_give_back() {
        for (threads, producers) in [(128u64, 128u32), (256, 128), (384, 128), (128, 256)] {
            for blocks in 1..=4u32 {
                let entry = registers_at_entry(threads, producers, blocks);
                let up = u64::from(compute_registers(threads, producers, blocks));
                let kept = u64::from(producer_registers(threads, producers, blocks));
                assert!(up >= entry, "{threads} + {producers} threads, {blocks} blocks: {up} < {entry}");
                assert!(
                    threads * (up - entry) <= u64::from(producers) * (entry - kept),
                    "{threads} + {producers} threads, {blocks} blocks: {up} registers asked, {entry} at entry"
                );
            }
        }
    }
}
