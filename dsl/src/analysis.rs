//! Static analysis of a kernel: shared memory, bank conflicts of every shared-memory
//! access, and global sectors per warp request — computed from the same copy plans that
//! codegen renders, so the numbers describe the code that runs.

use std::collections::{BTreeMap, BTreeSet};

use crate::{validate, with_barriers, CopyPlan, Diagnostics, Kernel, OperandPlan, SharedLayout, Statement, Target};

/// Elements per row assumed for global tensors when counting sectors: any multiple of 32
/// elements gives the same counts, since tiles are smaller than a row.
const ASSUMED_ROW_ELEMENTS: i64 = 8192;
const BANKS: i64 = 32;
const WARP: i64 = 32;

/// What the analyzer found; `Display` prints it as a table.
///
/// ```
/// # use tessera_dsl::*;
/// let report = Report { kernel: "k".into(), threads: 256, vector: 4, shared_bytes: 0, barriers: 0, accesses: vec![] };
/// assert!(report.to_string().starts_with("k: 256 threads, vector 4, 0 B shared memory"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub kernel: String,
    pub threads: u64,
    pub vector: u32,
    pub shared_bytes: i64,
    pub barriers: usize,
    pub accesses: Vec<AccessReport>,
}

/// One operand of one copy: a load from its source or a store to its destination.
#[derive(Clone, Debug, PartialEq)]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySpace {
    Global,
    Shared,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Load,
    Store,
}

/// Analyzes a valid kernel (invalid ones return their diagnostics).
pub fn analyze(kernel: &Kernel) -> Result<Report, Diagnostics> {
    validate(kernel, &Target::PORTABLE)?;
    let scope = kernel.constant_scope();
    let mut accesses = Vec::new();
    for statement in kernel.statements() {
        let Statement::Copy(copy) = statement else { continue };
        let plan = CopyPlan::new(kernel, copy, &scope).map_err(Diagnostics)?;
        for (operand, direction) in [(&plan.src, Direction::Load), (&plan.dst, Direction::Store)] {
            accesses.push(access(&plan, operand, direction, copy.to_string()));
        }
    }
    let shared_bytes =
        kernel.shared_buffers().iter().filter_map(|b| SharedLayout::of(b, kernel)).map(|l| l.bytes()).sum();
    let barriers = count_barriers(&with_barriers(&kernel.body));
    Ok(Report {
        kernel: kernel.name.clone(),
        threads: kernel.config.threads.count(),
        vector: kernel.config.vector.get(),
        shared_bytes,
        barriers,
        accesses,
    })
}

fn count_barriers(body: &[Statement]) -> usize {
    body.iter()
        .map(|s| match s {
            Statement::Sync(_) => 1,
            Statement::GridStride(l) => count_barriers(&l.body),
            _ => 0,
        })
        .sum()
}

/// The word addresses (4-byte units) each lane touches in one instruction.
type Instruction = Vec<Vec<i64>>;

fn access(plan: &CopyPlan, operand: &OperandPlan, direction: Direction, statement: String) -> AccessReport {
    let element_bytes = i64::from(plan.element.size_bytes());
    let vectorized = operand.vector_ok(plan.vector);
    let lane_elements = if vectorized { plan.vector } else { 1 };
    let width_bits = (lane_elements * element_bytes * 8) as u32;
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
    let (space, name, bank_ways, sectors) = match operand {
        OperandPlan::Shared(shared) => {
            let ways = instructions.iter().map(|i| bank_ways(i, lane_elements * element_bytes)).max().unwrap_or(1);
            let name = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            (MemorySpace::Shared, name, Some(ways), None)
        }
        OperandPlan::Global(global) => {
            let total: usize = instructions.iter().map(|i| sectors(i)).sum();
            let average = total as f64 / instructions.len().max(1) as f64;
            let ideal = (WARP * lane_elements * element_bytes) as f64 / 32.0;
            let name = if global.transposed { format!("{}.t()", global.tensor) } else { global.tensor.clone() };
            (MemorySpace::Global, name, None, Some((average, ideal.max(1.0))))
        }
    };
    AccessReport {
        statement,
        operand: name,
        space,
        direction,
        width_bits,
        instructions: plan.steps * components,
        bank_ways,
        sectors,
    }
}

/// Element offset of physical (row, col) from the start of the operand's tile.
fn element_offset(operand: &OperandPlan, row: i64, col: i64) -> i64 {
    match operand {
        OperandPlan::Shared(shared) => shared.layout.offset(row, col),
        OperandPlan::Global(global) if global.extent.len() == 1 => col,
        OperandPlan::Global(_) => row * ASSUMED_ROW_ELEMENTS + col,
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
            "{}: {} threads, vector {}, {} B shared memory, {} barrier{}",
            self.kernel,
            self.threads,
            self.vector,
            self.shared_bytes,
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
        Ok(())
    }
}
