//! Static analysis of a kernel: shared memory, bank conflicts of every shared-memory
//! access, and global sectors per warp request — computed from the same copy plans that
//! codegen renders, so the numbers describe the code that runs.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::reduction_report::reductions;
use crate::thread_access::{thread_accesses, AccessSite, Instruction};
use crate::{
    validate, with_barriers, AsyncCopyMapping, CopyPlan, Diagnostics, ElementType, EpiloguePlan, FragmentLoad, Kernel,
    MmaPlan, Occupancy, Operand, OperandPlan, ReductionReport, Statement, Target,
};

/// Elements per row assumed for global tensors when counting sectors: any multiple of 32
/// elements gives the same counts, since tiles are smaller than a row.
const ASSUMED_ROW_ELEMENTS: i64 = 8192;
const BANKS: i64 = 32;
const WARP: i64 = 32;

/// What the analyzer found; `Display` prints it as a table.
///
/// ```
/// # use tessera_dsl::*;
/// let report = Report {
///     kernel: "k".into(), threads: 256, vector: 4, shared_bytes: 0, reduction_shared_bytes: 0, dynamic_shared: false, barriers: 0,
///     accesses: vec![], reductions: vec![], tma: vec![], occupancy: vec![Occupancy::new(&Target::SM_90, 256, 0, None)],
/// };
/// assert!(report.to_string().starts_with("k: 256 threads, vector 4, 0 B shared memory"));
/// assert!(report.to_string().contains("sm_90   8 blocks  64 warps (100%)  limited by warps"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub kernel: String,
    pub threads: u64,
    pub vector: u32,
    /// Every stage of every shared buffer, 16-byte aligned.
    pub shared_bytes: i64,
    /// The warp slots its block reductions declare beside the buffers
    /// ([`crate::reduction_shared_bytes`]).
    pub reduction_shared_bytes: i64,
    /// Whether that is over what buffers may declare statically (48 KiB less tessera's own
    /// [`crate::RESERVED_STATIC_BYTES`]), so it is dynamic shared memory.
    pub dynamic_shared: bool,
    /// `__syncthreads` written in the body or placed between its stages, and those of its block
    /// reductions (two each).
    pub barriers: usize,
    pub accesses: Vec<AccessReport>,
    /// The reductions its thread code calls (`warp_sum(v, 8)`, `block_max(m)`, ..).
    pub reductions: Vec<ReductionReport>,
    /// The copies a TMA pipeline issues as bulk tensor copies (they have no per-thread accesses).
    pub tma: Vec<TmaCopyReport>,
    /// Blocks and warps per SM on each known architecture from threads and shared memory
    /// alone: registers (known once NVRTC has compiled the kernel) can only lower them.
    pub occupancy: Vec<Occupancy>,
}

/// One copy of a TMA pipeline (`copies = tma`): the boxes one producer thread issues per tile,
/// which the copy engine writes in the buffer's swizzle and counts on the stage's mbarrier.
///
/// ```
/// # use tessera_dsl::TmaCopyReport;
/// let a = TmaCopyReport {
///     statement: "copy(a.tile([by, k], [BM, BK]), &a_s)".into(), tensor: "a".into(),
///     boxes: 1, row_slices: 1, box_rows: 128, box_cols: 64, box_bytes: 16384, swizzle_bytes: 128, multicast: None, store: false,
/// };
/// assert_eq!(a.to_string(), "TMA      a        1 box of 128 × 64 (16384 B), 128-byte swizzle, issued by one thread");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TmaCopyReport {
    /// The copy, as written.
    pub statement: String,
    pub tensor: String,
    pub boxes: u32,
    pub box_rows: u32,
    pub box_cols: u32,
    pub box_bytes: u32,
    pub swizzle_bytes: u32,
    /// Boxes down each panel (1 unless a multicast tile's rows are sliced among the blocks).
    pub row_slices: u32,
    /// In clusters (`cluster = ..`), the blocks the tile is multicast to, each issuing an
    /// equal share of the boxes; `None` where each block copies its own.
    pub multicast: Option<u32>,
    /// A store (`.by_tma()`): each compute warp stores its rows, a box a 128-byte panel.
    pub store: bool,
}

impl TmaCopyReport {
    /// The report of `copy`, which TMA moves in boxes of `map`.
    fn of(copy: &crate::TileCopy, map: &crate::TensorMap, multicast: Option<u32>, store: bool) -> Self {
        TmaCopyReport {
            statement: copy.to_string(),
            tensor: map.tensor.clone(),
            boxes: map.boxes,
            row_slices: map.row_slices,
            box_rows: map.box_rows,
            box_cols: map.box_cols,
            box_bytes: map.box_bytes(),
            swizzle_bytes: map.swizzle_bytes,
            multicast,
            store,
        }
    }
}

impl std::fmt::Display for TmaCopyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.store {
            return write!(
                f,
                "TMA      {:<8} stored a box of {} × {} ({} B, {}-byte swizzle) a warp and panel, from the warp's two staging buffers",
                self.tensor, self.box_rows, self.box_cols, self.box_bytes, self.swizzle_bytes
            );
        }
        write!(
            f,
            "TMA      {:<8} {} box{} of {} × {} ({} B{}), {}-byte swizzle, issued by one thread",
            self.tensor,
            self.boxes * self.row_slices,
            if self.boxes * self.row_slices == 1 { "" } else { "es" },
            self.box_rows,
            self.box_cols,
            self.box_bytes,
            if self.boxes * self.row_slices == 1 { "" } else { " each" },
            self.swizzle_bytes
        )?;
        if let Some(blocks) = self.multicast {
            let each = self.boxes * self.row_slices / blocks.max(1);
            write!(
                f,
                "\n                      multicast to the {blocks} blocks of the cluster, which share the tile: {each} box{} issued by each",
                if each == 1 { "" } else { "es" }
            )?;
        }
        Ok(())
    }
}

/// One operand of one copy: a load from its source or a store to its destination.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AccessReport {
    /// The copy, as written.
    pub statement: String,
    /// The operand: `x`, `t`, `t.t()`.
    pub operand: String,
    pub space: MemorySpace,
    pub direction: Direction,
    /// Bits per instruction and lane: 32, 64 or 128.
    pub width_bits: u32,
    /// Instructions per thread for one tile.
    pub instructions: i64,
    /// Shared memory: the worst number of wavefronts one instruction needs per phase
    /// (1 = conflict-free, n = n-way bank conflict).
    pub bank_ways: Option<i64>,
    /// Global memory: 32-byte sectors per warp request, on average, and the fewest possible.
    pub sectors: Option<(f64, f64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySpace {
    Global,
    Shared,
    /// A fragment's registers (an `mma`'s register operand; no memory access).
    Registers,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Load,
    Store,
}

/// Analyzes a valid kernel (invalid ones return their diagnostics).
pub fn analyze(kernel: &Kernel) -> Result<Report, Diagnostics> {
    validate(kernel, &kernel.target())?;
    let scope = kernel.constant_scope();
    let async_copies = kernel.async_copies();
    let tma_pipeline = kernel.copies_by_tma();
    let mut accesses = Vec::new();
    let mut tma = Vec::new();
    for statement in kernel.statements() {
        match statement {
            Statement::Copy(copy) if matches!(copy.src, Operand::Fragment(_)) => {
                // stored by TMA from the warps' staging buffers: boxes, not per-thread stores
                if let (true, Some(map)) = (copy.by_tma, kernel.tma_store_map()) {
                    tma.push(TmaCopyReport::of(copy, &map, None, true));
                    continue;
                }
                let plan = EpiloguePlan::new(kernel, copy, &scope).map_err(Diagnostics)?;
                accesses.extend(epilogue_accesses(kernel, &plan, copy.to_string()));
            }
            Statement::Copy(copy) => {
                let plan = CopyPlan::new(kernel, copy, &scope).map_err(Diagnostics)?;
                // a TMA pipeline's copies: boxes, not per-thread accesses
                if let (true, true, Ok(map)) =
                    (tma_pipeline, async_copies.contains(&copy), kernel.copy_tensor_map(copy, &plan))
                {
                    let multicast = kernel.multicasts(copy).then(|| kernel.cluster_tiles().map(|c| c.blocks)).flatten();
                    tma.push(TmaCopyReport::of(copy, &map, multicast, false));
                    continue;
                }
                let mapping = async_copies.contains(&copy).then(|| AsyncCopyMapping::of(&plan)).flatten();
                for (operand, direction) in [(&plan.src, Direction::Load), (&plan.dst, Direction::Store)] {
                    accesses.push(match &mapping {
                        Some(mapping) => async_access(&plan, mapping, operand, direction, copy.to_string()),
                        None => access(&plan, operand, direction, copy.to_string()),
                    });
                }
            }
            Statement::Mma(mma) => {
                let plan = MmaPlan::new(kernel, mma, &scope).map_err(Diagnostics)?;
                if plan.layout.warp_tile.is_some() {
                    accesses.extend(ldmatrix_accesses(&plan, mma.to_string()));
                } else {
                    accesses.extend(mma_accesses(&plan, mma.to_string()));
                }
            }
            _ => {}
        }
    }
    accesses.extend(thread_accesses(kernel).iter().map(thread_access));
    let shared = kernel.shared_memory();
    let reductions = reductions(kernel);
    let barriers = count_barriers(&with_barriers(&kernel.body))
        + reductions.iter().map(|reduction| reduction.barriers as usize).sum::<usize>();
    let threads = kernel.launch_threads();
    let occupancy = Target::KNOWN
        .iter()
        .map(|target| Occupancy::new(target, threads as u32, shared.block_bytes() as u32, None))
        .collect();
    Ok(Report {
        kernel: kernel.name.clone(),
        threads,
        vector: kernel.config.vector.get(),
        shared_bytes: shared.bytes,
        reduction_shared_bytes: shared.reduction_bytes,
        dynamic_shared: shared.dynamic,
        barriers,
        accesses,
        reductions,
        tma,
        occupancy,
    })
}

fn count_barriers(body: &[Statement]) -> usize {
    body.iter()
        .map(|s| match s {
            Statement::Sync(_) => 1,
            Statement::GridStride(l) => count_barriers(&l.body),
            // double buffering: one after the prologue, one per tile
            Statement::Pipeline(p) if p.stages >= 2 => 2,
            Statement::Pipeline(p) => count_barriers(&p.body),
            _ => 0,
        })
        .sum()
}

fn access(plan: &CopyPlan, operand: &OperandPlan, direction: Direction, statement: String) -> AccessReport {
    let element_bytes = i64::from(plan.element.size_bytes());
    let vectorized = operand.vector_ok(plan.vector);
    let lane_elements = if vectorized { plan.vector } else { 1 };
    let components = if vectorized { 1 } else { plan.vector };
    let warps = (plan.threads + WARP - 1) / WARP;
    let mut instructions: Vec<Instruction> = Vec::new();
    for warp in 0..warps {
        for step in 0..plan.steps {
            for component in 0..components {
                let lanes = (0..WARP)
                    .map(|lane| warp * WARP + lane)
                    .filter(|tid| *tid < plan.threads)
                    .map(|tid| {
                        let (row, col) = plan.item(step, tid);
                        let (prow, pcol) = operand.physical(row, col + component);
                        let first = element_offset(operand, prow, pcol) * element_bytes;
                        let bytes = lane_elements * element_bytes;
                        (first / 4..(first + bytes) / 4).collect()
                    })
                    .collect();
                instructions.push(lanes);
            }
        }
    }
    summarize(operand, direction, statement, &instructions, lane_elements, element_bytes, plan.steps * components)
}

/// The report of one side of a copy from its warp instructions (each lane's 4-byte words).
fn summarize(
    operand: &OperandPlan,
    direction: Direction,
    statement: String,
    instructions: &[Instruction],
    lane_elements: i64,
    element_bytes: i64,
    per_thread: i64,
) -> AccessReport {
    let width_bits = (lane_elements * element_bytes * 8) as u32;
    let (space, name, bank_ways, sectors) = match operand {
        OperandPlan::Shared(shared) => {
            let ways = instructions.iter().map(|i| bank_ways(i, lane_elements * element_bytes)).max().unwrap_or(1);
            let name = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            (MemorySpace::Shared, name, Some(ways), None)
        }
        OperandPlan::Global(global) => {
            let total: usize = instructions.iter().map(sectors).sum();
            let average = total as f64 / instructions.len().max(1) as f64;
            let ideal = (WARP * lane_elements * element_bytes) as f64 / 32.0;
            let name = if global.transposed { format!("{}.t()", global.tensor) } else { global.tensor.clone() };
            (MemorySpace::Global, name, None, Some((average, ideal.max(1.0))))
        }
        // (the copy planner gives no copy a register side; an mma's is not summarized)
        OperandPlan::Fragment(fragment) => (MemorySpace::Registers, fragment.fragment.clone(), None, None),
    };
    AccessReport {
        statement,
        operand: name,
        space,
        direction,
        width_bits,
        instructions: per_thread,
        bank_ways,
        sectors,
    }
}

/// A copy of a cp.async pipeline: each thread's copies at `mapping`'s offsets from its first
/// element, one warp instruction per offset.
fn async_access(
    plan: &CopyPlan,
    mapping: &AsyncCopyMapping,
    operand: &OperandPlan,
    direction: Direction,
    statement: String,
) -> AccessReport {
    let element_bytes = i64::from(plan.element.size_bytes());
    let bytes = mapping.width * element_bytes;
    let warps = (plan.threads + WARP - 1) / WARP;
    let mut instructions: Vec<Instruction> = Vec::new();
    for warp in 0..warps {
        for (row_offset, col_offset) in &mapping.offsets {
            let lanes = (0..WARP)
                .map(|lane| warp * WARP + lane)
                .filter(|tid| *tid < plan.threads)
                .map(|tid| {
                    let (row, col) = mapping.first(tid);
                    let (prow, pcol) = operand.physical(row + row_offset, col + col_offset);
                    let first = element_offset(operand, prow, pcol) * element_bytes;
                    (first / 4..(first + bytes) / 4).collect()
                })
                .collect();
            instructions.push(lanes);
        }
    }
    summarize(operand, direction, statement, &instructions, mapping.width, element_bytes, mapping.offsets.len() as i64)
}

/// The shared loads of one k-step of `mma`: each thread reads its values of a and b.
fn mma_accesses(plan: &MmaPlan, statement: String) -> Vec<AccessReport> {
    let element_bytes = i64::from(plan.layout.element.size_bytes());
    let threads = plan.layout.threads();
    let warps = (threads + WARP - 1) / WARP;
    let mut reports = Vec::new();
    for (operand, loads, is_a) in [(&plan.a, plan.a_loads(), true), (&plan.b, plan.b_loads(), false)] {
        let OperandPlan::Shared(shared) = operand else { continue };
        let mut worst = 1;
        let mut width_bits = 0;
        for FragmentLoad { first, width } in &loads {
            width_bits = (*width * element_bytes * 8) as u32;
            for warp in 0..warps {
                let lanes: Instruction = (0..WARP)
                    .map(|lane| warp * WARP + lane)
                    .filter(|tid| *tid < threads)
                    .map(|tid| {
                        let (thread_row, thread_col) = plan.layout.thread_position(tid);
                        let (row, col) = if is_a {
                            (plan.layout.row(thread_row, *first), 0)
                        } else {
                            (0, plan.layout.col(thread_col, *first))
                        };
                        let (prow, pcol) = operand.physical(row, col);
                        let start = shared.layout.offset(prow, pcol) * element_bytes;
                        (start / 4..(start + width * element_bytes) / 4).collect()
                    })
                    .collect();
                worst = worst.max(bank_ways(&lanes, width * element_bytes));
            }
        }
        reports.push(AccessReport {
            statement: statement.clone(),
            operand: if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() },
            space: MemorySpace::Shared,
            direction: Direction::Load,
            width_bits,
            instructions: loads.len() as i64 * plan.k,
            bank_ways: Some(worst),
            sectors: None,
        });
    }
    reports
}

/// The `ldmatrix` loads of one tile of a tensor-core `mma`: every lane gives the address of one
/// 16-byte row, and each 8 × 8 matrix (8 lanes' rows, 128 bytes) is one phase of the shared
/// memory, so a matrix whose rows share a bank group is served in several wavefronts. Operands
/// `ldmatrix` cannot load (and a wgmma's A that the lanes load) are each lane's own values.
fn ldmatrix_accesses(plan: &MmaPlan, statement: String) -> Vec<AccessReport> {
    let layout = &plan.layout;
    let Some([warp_rows, warp_cols]) = layout.warp_tile else { return vec![] };
    // mma.sync's operands, or the A of a wgmma that the lanes load (a TF32 A stored MN-major,
    // one value a register in mma.sync's m16n8k8 layout: wgmma reads B itself)
    let (k_step, operands) = match plan.instruction {
        crate::MmaInstruction::MmaSync { k, .. } => (k, &[true, false][..]),
        crate::MmaInstruction::Wgmma { .. } if plan.lanes_load_a() => (plan.instruction.k_step(), &[true][..]),
        _ => return vec![],
    };
    let warps = layout.threads() / WARP;
    let mut reports = Vec::new();
    for &is_a in operands {
        let operand = if is_a { &plan.a } else { &plan.b };
        let OperandPlan::Shared(shared) = operand else { continue };
        let element_bytes = i64::from(shared.layout.element.size_bytes());
        let contiguous = !shared.transposed;
        let by_ldmatrix = plan.instruction.ldmatrix_loads(is_a, contiguous);
        // elements in one 16-byte ldmatrix row
        let chunk = 16 / element_bytes;
        // (lanes giving addresses, tiles along the warp tile, registers a lane loads per tile
        // and k-step one element at a time)
        let (lanes, tiles, registers) = if !by_ldmatrix {
            if is_a {
                (WARP, warp_rows / 16, 4)
            } else {
                (WARP, warp_cols / 8, 2)
            }
        } else if is_a {
            (WARP, warp_rows / 16, 1)
        } else if (warp_cols / 8) % 2 == 0 {
            (WARP, warp_cols / 16, 1)
        } else {
            (16, warp_cols / 8, 1)
        };
        // the element lane `lane` reads (or, for ldmatrix, the first of the row it points at)
        // for tile `tile` at k-step `kk`, register `r`
        let logical = |warp: i64, tile: i64, kk: i64, lane: i64, r: i64| -> (i64, i64) {
            let (warp_row0, warp_col0) = layout.warp_origin(warp);
            if !by_ldmatrix {
                return if is_a {
                    (warp_row0 + tile * 16 + lane / 4 + r % 2 * 8, kk + lane % 4 + r / 2 * 4)
                } else {
                    (kk + lane % 4 + r * 4, warp_col0 + tile * 8 + lane / 4)
                };
            }
            match (is_a, contiguous) {
                (true, true) => (warp_row0 + tile * 16 + lane % 16, kk + lane / 16 * chunk),
                (true, false) => (warp_row0 + tile * 16 + lane / 8 % 2 * 8, kk + lane / 16 * 8 + lane % 8),
                (false, true) => (kk + lane % 16, warp_col0 + tile * (lanes / 2) + lane / 16 * 8),
                (false, false) => {
                    (kk + lane / 8 % 2 * chunk, warp_col0 + tile * (lanes / 2) + lane / 16 * 8 + lane % 8)
                }
            }
        };
        let lane_bytes = if by_ldmatrix { 16 } else { element_bytes };
        let mut worst = 1;
        for warp in 0..warps {
            for tile in 0..tiles {
                for kk in (0..plan.k).step_by(k_step.max(1) as usize) {
                    for r in 0..registers {
                        let instruction: Instruction = (0..lanes)
                            .map(|lane| {
                                let (row, col) = logical(warp, tile, kk, lane, r);
                                let (prow, pcol) = operand.physical(row, col);
                                let start = shared.layout.offset(prow, pcol) * element_bytes;
                                (start / 4..(start + lane_bytes.max(4)) / 4).collect()
                            })
                            .collect();
                        worst = worst.max(bank_ways(&instruction, lane_bytes));
                    }
                }
            }
        }
        reports.push(AccessReport {
            statement: statement.clone(),
            operand: if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() },
            space: MemorySpace::Shared,
            direction: Direction::Load,
            width_bits: (lane_bytes * 8) as u32,
            instructions: tiles * registers * (plan.k / k_step.max(1)).max(1),
            bank_ways: Some(worst),
            sectors: None,
        });
    }
    reports
}

/// The global accesses of an epilogue: its stores, and on the 16-byte path of a wgmma
/// fragment ([`crate::FragmentLayout::wide_store_columns`]) the loads of the tensors its map
/// reads at each value's own place, which take the stores' pattern.
fn epilogue_accesses(kernel: &Kernel, plan: &EpiloguePlan, statement: String) -> Vec<AccessReport> {
    let element = plan.stored;
    let wide = (!plan.transposed).then(|| plan.layout.wide_store_columns(element)).flatten();
    let Some(columns) = wide else { return vec![epilogue_access(plan, element, statement)] };
    let layout = &plan.layout;
    let element_bytes = i64::from(element.size_bytes());
    let [warp_rows, warp_cols] = layout.warp_tile.unwrap_or([16, 8]);
    let group_columns = if element.is_half() { 32 } else { 16 };
    let mut instructions: Vec<Instruction> = Vec::new();
    for warp in 0..layout.threads() / WARP {
        let (warp_row0, warp_col0) = layout.warp_origin(warp);
        for mi in 0..warp_rows / 16 {
            for half in 0..2 {
                for group in 0..warp_cols / group_columns {
                    instructions.push(
                        (0..WARP)
                            .map(|lane| {
                                let (row, col) = layout.wide_store_position(element, lane, [mi, half, group]);
                                let start =
                                    ((warp_row0 + row) * ASSUMED_ROW_ELEMENTS + warp_col0 + col) * element_bytes;
                                (start / 4..(start + 16) / 4).collect()
                            })
                            .collect(),
                    );
                }
            }
        }
    }
    let total: usize = instructions.iter().map(sectors).sum();
    let report = |operand: &str, direction| AccessReport {
        statement: statement.clone(),
        operand: operand.to_string(),
        space: MemorySpace::Global,
        direction,
        width_bits: 128,
        instructions: layout.thread_rows * layout.thread_cols / columns,
        bank_ways: None,
        sectors: Some((total as f64 / instructions.len().max(1) as f64, (WARP * 16) as f64 / 32.0)),
    };
    let mut reports = vec![report(&plan.dst.tensor, Direction::Store)];
    if plan.reads_destination_in_place() {
        // β · C (only when β ≠ 0): 16-bit values where the lane stores, f32 the lane's own pairs
        let beta_c = format!("{} (β ≠ 0)", plan.dst.tensor);
        reports.push(match element.is_half() {
            true => report(&beta_c, Direction::Load),
            false => AccessReport {
                operand: beta_c,
                direction: Direction::Load,
                ..epilogue_access(plan, element, statement.clone())
            },
        });
    }
    reports.extend(plan.vector_reads_in_place(kernel).iter().map(|read| report(read, Direction::Load)));
    reports
}

/// The global stores of an epilogue of `element` values along the pair path: each thread
/// writes its tile in vectors along rows (a tensor-core fragment: two neighbouring columns at
/// a time).
fn epilogue_access(plan: &EpiloguePlan, element: ElementType, statement: String) -> AccessReport {
    let layout = &plan.layout;
    if let (Some([warp_rows, warp_cols]), true) = (layout.warp_tile, plan.transposed) {
        // `&acc.t()`: one value a lane per store, at the transposed place
        let element_bytes = i64::from(element.size_bytes());
        let warps = layout.threads() / WARP;
        let mut instructions: Vec<Instruction> = Vec::new();
        for warp in 0..warps {
            let (warp_row0, warp_col0) = layout.warp_origin(warp);
            for mi in 0..warp_rows / 16 {
                for ni in 0..warp_cols / 8 {
                    for value in 0..4 {
                        instructions.push(
                            (0..WARP)
                                .map(|lane| {
                                    let (row, col) = layout.lane_value_position(lane, [mi, ni, value]);
                                    let start =
                                        ((warp_col0 + col) * ASSUMED_ROW_ELEMENTS + warp_row0 + row) * element_bytes;
                                    (start / 4..(start + element_bytes + 3) / 4).collect()
                                })
                                .collect(),
                        );
                    }
                }
            }
        }
        let total: usize = instructions.iter().map(sectors).sum();
        return AccessReport {
            statement,
            operand: plan.dst.tensor.clone(),
            space: MemorySpace::Global,
            direction: Direction::Store,
            width_bits: (element_bytes * 8) as u32,
            instructions: layout.thread_rows * layout.thread_cols,
            bank_ways: None,
            sectors: Some((total as f64 / instructions.len().max(1) as f64, (WARP * element_bytes) as f64 / 32.0)),
        };
    }
    if let Some([warp_rows, warp_cols]) = layout.warp_tile {
        let element_bytes = i64::from(element.size_bytes());
        let warps = layout.threads() / WARP;
        let mut instructions: Vec<Instruction> = Vec::new();
        for warp in 0..warps {
            let (warp_row0, warp_col0) = layout.warp_origin(warp);
            for mi in 0..warp_rows / 16 {
                for ni in 0..warp_cols / 8 {
                    for half in 0..2 {
                        instructions.push(
                            (0..WARP)
                                .map(|lane| {
                                    let (row, col) = layout.lane_value_position(lane, [mi, ni, half * 2]);
                                    let start =
                                        ((warp_row0 + row) * ASSUMED_ROW_ELEMENTS + warp_col0 + col) * element_bytes;
                                    (start / 4..(start + 2 * element_bytes) / 4).collect()
                                })
                                .collect(),
                        );
                    }
                }
            }
        }
        let total: usize = instructions.iter().map(sectors).sum();
        return AccessReport {
            statement,
            operand: plan.dst.tensor.clone(),
            space: MemorySpace::Global,
            direction: Direction::Store,
            width_bits: (2 * element_bytes * 8) as u32,
            instructions: layout.thread_rows * layout.thread_cols / 2,
            bank_ways: None,
            sectors: Some((total as f64 / instructions.len().max(1) as f64, (WARP * 2 * element_bytes) as f64 / 32.0)),
        };
    }
    let element_bytes = i64::from(element.size_bytes());
    let threads = layout.threads();
    let warps = (threads + WARP - 1) / WARP;
    let mut instructions: Vec<Instruction> = Vec::new();
    for warp in 0..warps {
        for i in 0..layout.thread_rows {
            for j in (0..layout.thread_cols).step_by(plan.vector as usize) {
                instructions.push(
                    (0..WARP)
                        .map(|lane| warp * WARP + lane)
                        .filter(|tid| *tid < threads)
                        .map(|tid| {
                            let (thread_row, thread_col) = layout.thread_position(tid);
                            let start = (layout.row(thread_row, i) * ASSUMED_ROW_ELEMENTS + layout.col(thread_col, j))
                                * element_bytes;
                            (start / 4..(start + plan.vector * element_bytes) / 4).collect()
                        })
                        .collect(),
                );
            }
        }
    }
    let total: usize = instructions.iter().map(sectors).sum();
    let average = total as f64 / instructions.len().max(1) as f64;
    let ideal = (WARP * plan.vector * element_bytes) as f64 / 32.0;
    AccessReport {
        statement,
        operand: plan.dst.tensor.clone(),
        space: MemorySpace::Global,
        direction: Direction::Store,
        width_bits: (plan.vector * element_bytes * 8) as u32,
        instructions: layout.thread_rows * layout.thread_cols / plan.vector,
        bank_ways: None,
        sectors: Some((average, ideal)),
    }
}

/// One access site of thread code: the worst bank conflict of its instructions, or their
/// average sectors beside the fewest their active lanes' bytes could take.
fn thread_access(site: &AccessSite) -> AccessReport {
    let (space, bank_ways, sectors_per_request) = if site.shared {
        let ways = site.instructions.iter().map(|i| bank_ways(i, site.lane_bytes)).max().unwrap_or(1);
        (MemorySpace::Shared, Some(ways), None)
    } else {
        let count = site.instructions.len().max(1) as f64;
        let total: usize = site.instructions.iter().map(sectors).sum();
        let ideal: i64 = site
            .instructions
            .iter()
            .map(|i| ((i.iter().filter(|lane| !lane.is_empty()).count() as i64 * site.lane_bytes + 31) / 32).max(1))
            .sum();
        (MemorySpace::Global, None, Some((total as f64 / count, ideal as f64 / count)))
    };
    AccessReport {
        statement: site.statement.clone(),
        operand: site.operand.clone(),
        space,
        direction: if site.store { Direction::Store } else { Direction::Load },
        width_bits: (site.lane_bytes * 8) as u32,
        instructions: site.per_thread,
        bank_ways,
        sectors: sectors_per_request,
    }
}

/// Element offset of physical (row, col) from the start of the operand's tile.
fn element_offset(operand: &OperandPlan, row: i64, col: i64) -> i64 {
    match operand {
        OperandPlan::Shared(shared) => shared.layout.offset(row, col),
        OperandPlan::Global(global) if global.extent.len() == 1 => col,
        OperandPlan::Global(_) => row * ASSUMED_ROW_ELEMENTS + col,
        OperandPlan::Fragment(fragment) => row * fragment.layout.cols + col,
    }
}

/// Wavefronts per phase: lanes are served in phases of 128 bytes (32 lanes of 4 bytes, 16
/// of 8, 8 of 16); within a phase, distinct words in one bank are served one at a time,
/// while equal words are broadcast.
fn bank_ways(instruction: &Instruction, lane_bytes: i64) -> i64 {
    let lanes_per_phase = (128 / lane_bytes.max(4)).max(1) as usize;
    instruction
        .chunks(lanes_per_phase)
        .map(|phase| {
            let mut banks: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
            for word in phase.iter().flatten() {
                banks.entry(word.rem_euclid(BANKS)).or_default().insert(*word);
            }
            banks.values().map(|words| words.len() as i64).max().unwrap_or(1)
        })
        .max()
        .unwrap_or(1)
}

/// Distinct 32-byte sectors one warp instruction touches.
fn sectors(instruction: &Instruction) -> usize {
    instruction.iter().flatten().map(|word| word * 4 / 32).collect::<BTreeSet<_>>().len()
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} threads, vector {}, {} B shared memory{}{}, {} barrier{}",
            self.kernel,
            self.threads,
            self.vector,
            self.shared_bytes + self.reduction_shared_bytes,
            if self.reduction_shared_bytes > 0 {
                format!(" ({} B of it the block reductions' warp slots)", self.reduction_shared_bytes)
            } else {
                String::new()
            },
            if self.dynamic_shared { " (dynamic: over the 47 KiB of static buffers)" } else { "" },
            self.barriers,
            if self.barriers == 1 { "" } else { "s" }
        )?;
        let mut last = "";
        for access in &self.accesses {
            if access.statement != last {
                writeln!(f, "  {}", access.statement)?;
                last = &access.statement;
            }
            let space = match access.space {
                MemorySpace::Global => "global",
                MemorySpace::Shared => "shared",
                MemorySpace::Registers => "registers",
            };
            let direction = match access.direction {
                Direction::Load => "load ",
                Direction::Store => "store",
            };
            let cost = match (access.bank_ways, access.sectors) {
                (Some(1), _) => "conflict-free".to_string(),
                (Some(ways), _) => format!("{ways}-way bank conflict"),
                (_, Some((average, ideal))) => format!("{average:.1} sectors/request (ideal {ideal:.0})"),
                _ => String::new(),
            };
            writeln!(
                f,
                "    {direction} {space} {:<8} {:>3}-bit × {:<3} {cost}",
                access.operand, access.width_bits, access.instructions
            )?;
        }
        for reduction in &self.reductions {
            writeln!(f, "  {}", reduction.statement)?;
            writeln!(f, "    {reduction}")?;
        }
        for copy in &self.tma {
            writeln!(f, "  {}", copy.statement)?;
            writeln!(f, "    {copy}")?;
        }
        if !self.occupancy.is_empty() {
            writeln!(f, "  occupancy bound per SM from threads and shared memory (registers can only lower it):")?;
            for o in &self.occupancy {
                writeln!(
                    f,
                    "    {:<6} {:>2} blocks  {:>2} warps ({:.0}%)  limited by {}",
                    o.target,
                    o.blocks_per_sm,
                    o.warps_per_sm,
                    o.fraction() * 100.0,
                    o.limited_by_text()
                )?;
            }
        }
        Ok(())
    }
}
