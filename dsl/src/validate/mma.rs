//! `mma`: the instruction a fragment's layout and the operands' types select (FFMA, mma.sync,
//! wgmma), its shapes and unrolling, and the vector widths of its shared-memory reads.

use super::*;

impl Checker<'_> {
    /// A tensor-core `mma`: the k extent splits into k-steps of the instruction, the operands
    /// are 16-bit floats of one type, and shared operands keep every 16-byte row `ldmatrix`
    /// reads aligned; `vector` moves 16 bytes of them per access.
    pub(super) fn tensor_core_mma(&mut self, mma: &Mma, plan: &MmaPlan) {
        if let MmaInstruction::Wgmma { input, n } = plan.instruction {
            return self.wgmma(mma, plan, input, n);
        }
        let MmaInstruction::MmaSync { input, k: step } = plan.instruction else { return };
        if plan.k % step != 0 {
            self.error(
                mma.origin,
                format!(
                    "`{mma}` multiplies over k = {} but mma.sync on {input} takes k-steps of {step}: {} is not a multiple of {step}",
                    plan.k, plan.k
                ),
                Some(format!("make the k extent (BK) a multiple of {step}, e.g. {}", (plan.k / step).max(1) * step)),
            );
        }
        let declared = self.kernel.config.vector.get();
        let bytes = declared * input.size_bytes();
        // (a launch narrows the width for unaligned rows: cp.async then copies 4 or 8 bytes, or
        // single elements through registers)
        if bytes > 16 || (bytes < 16 && !self.kernel.config.narrowed) {
            self.error(
                self.kernel.config.vector_origin,
                format!(
                    "vector = {declared} with {input} operands of a tensor-core `mma` is {bytes}-byte accesses; their copies and ldmatrix rows move 16 bytes"
                ),
                Some(format!("use vector = {} ({} × {} B = 16 B)", 16 / input.size_bytes(), 16 / input.size_bytes(), input.size_bytes())),
            );
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let OperandPlan::Shared(shared) = operand else { continue };
            if !plan.instruction.ldmatrix_loads(is_a, !shared.transposed) {
                continue;
            }
            let layout = shared.layout;
            let row_bytes = layout.row_bytes();
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let per_row = 16 / i64::from(input.size_bytes());
            if row_bytes % 16 != 0 {
                self.error(
                    mma.origin,
                    format!(
                        "`ldmatrix` reads 16-byte rows of `{view}`, but its rows are {} elements ({row_bytes} B) apart, so every other row starts off a 16-byte boundary",
                        layout.stride()
                    ),
                    Some(format!(
                        "pad `{}` to a multiple of {per_row} elements (`.pad({})`) or use `.swizzle_bytes(128)` instead of padding",
                        shared.buffer,
                        (per_row - layout.cols % per_row) % per_row + if layout.pad > 0 { per_row } else { 0 }
                    )),
                );
            } else if let Some(unit) = layout.swizzle.filter(|unit| unit * i64::from(input.size_bytes()) % 16 != 0) {
                self.error(
                    mma.origin,
                    format!(
                        "`.swizzle({unit})` on `{}` moves groups of {unit} {input} ({} B), which splits the 16-byte rows `ldmatrix` reads",
                        shared.buffer,
                        unit * i64::from(input.size_bytes())
                    ),
                    Some("use `.swizzle_bytes(128)`, which permutes whole 16-byte chunks".into()),
                );
            }
        }
    }

    /// A wgmma `mma`: k-steps of 16, both operands in shared memory in the hardware's swizzled
    /// panels (what a descriptor can address), filled by a cp.async pipeline.
    pub(super) fn wgmma(&mut self, mma: &Mma, plan: &MmaPlan, input: ElementType, n: i64) {
        let step = plan.instruction.k_step();
        // a warpgroup of several m64 tiles issues one wgmma per tile, each reading its own 64
        // rows of A through a descriptor; the register forms pack one tile's A
        let m_tiles = plan.layout.warpgroup_m_tiles();
        if m_tiles > 1 {
            let a_in_registers = match &plan.a {
                OperandPlan::Fragment(fragment) => Some(format!("the fragment `{}` in registers", fragment.fragment)),
                _ if plan.lanes_load_a() => Some("loaded by the lanes (a TF32 A stored MN-major)".to_string()),
                _ => None,
            };
            let rows = m_tiles * 64;
            if let Some(a) = a_in_registers {
                self.error(
                    mma.origin,
                    format!("`{mma}`: `{}` holds {m_tiles} m64 tiles a warpgroup ({rows} rows), which tessera multiplies only with A read from shared memory through descriptors; here A is {a}", mma.acc),
                    Some(format!("use a `.warpgroup_tile([64, {n}])` accumulator")),
                );
            } else if mma.deferred {
                self.error(
                    mma.origin,
                    format!("`{mma}`: `.deferred()` issues one m64 tile's product behind the next k-tile's; `{}` holds {m_tiles} m64 tiles a warpgroup ({rows} rows)", mma.acc),
                    Some(format!("use a `.warpgroup_tile([64, {n}])` accumulator, or drop `.deferred()`")),
                );
            }
        }
        // `.unroll(n)`: k-steps per commit group, where the lanes load A a group at a time
        if let Some(group) = mma.unroll.map(i64::from) {
            let steps = plan.k / step;
            if !plan.lanes_load_a() {
                self.error(
                    mma.unroll_origin,
                    format!("`.unroll({group})` on `{mma}`: wgmma issues a k-tile's {steps} k-steps as one commit group; only a TF32 A the lanes load from shared memory is issued in groups of k-steps"),
                    Some("drop `.unroll(..)`".into()),
                );
            } else if group == 0 || steps % group != 0 {
                let divisors: Vec<String> = (1..=steps).filter(|d| steps % d == 0).map(|d| d.to_string()).collect();
                self.error(
                    mma.unroll_origin,
                    format!("`.unroll({group})`: commit groups of {group} k-steps do not divide the {steps} k-steps of `{mma}`"),
                    Some(format!("group by one of {}", divisors.join(", "))),
                );
            }
        }
        if plan.k % step != 0 {
            self.error(
                mma.origin,
                format!("`{mma}` multiplies over k = {} but wgmma on {input} takes k-steps of {step}", plan.k),
                Some(format!("make the k extent (BK) a multiple of {step}, e.g. {}", (plan.k / step).max(1) * step)),
            );
        }
        let pipelined = self.kernel.statements().iter().any(|s| {
            matches!(s, Statement::Pipeline(p) if p.stages >= 3 && p.body.iter().any(|b| matches!(b, Statement::Mma(m) if m == mma)))
        });
        if !pipelined {
            self.error(
                mma.origin,
                format!("`{mma}` on wgmma reads shared tiles that a cp.async pipeline fills: put it in `for k in pipeline(.., stages = 3)` (or more)"),
                None,
            );
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let name = if is_a { "A" } else { "B" };
            let shared = match operand {
                OperandPlan::Shared(shared) => shared,
                OperandPlan::Global(global) => {
                    self.error(
                        mma.origin,
                        format!(
                            "wgmma reads operand {name} from shared memory through a descriptor; `{}` is a global tile",
                            global.tensor
                        ),
                        Some(
                            "copy the tile into a `shared::<T>([..]).swizzle_bytes(128).panels()` buffer first".into(),
                        ),
                    );
                    continue;
                }
                OperandPlan::Fragment(fragment) if input == ElementType::F32 => {
                    self.error(
                        mma.origin,
                        format!(
                            "TF32 wgmma takes A from shared memory here: `{}` in registers would need its f32 values in wgmma's TF32 register layout, which tessera does not pack",
                            fragment.fragment
                        ),
                        Some("stage the fragment through a shared buffer, or multiply it on 16-bit operands".into()),
                    );
                    continue;
                }
                OperandPlan::Fragment(_) => continue,
            };
            let layout = shared.layout;
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let operand_origin = if is_a { mma.a.origin() } else { mma.b.origin() };
            let Some(panel_cols) = layout.panel_cols() else {
                self.error(
                    operand_origin,
                    format!("wgmma reads `{view}` through a descriptor, which addresses the hardware's swizzled panels only"),
                    Some(format!(
                        "declare `{}` with `.swizzle_bytes(128).panels()` (a [{}, {}] {} tile: {} panel(s) of 128 B rows)",
                        shared.buffer,
                        layout.rows,
                        layout.cols,
                        layout.element,
                        (layout.cols * i64::from(layout.element.size_bytes()) / 128).max(1)
                    )),
                );
                continue;
            };
            // stored with k along the rows' contiguous columns (K-major), or with M / N there
            // (MN-major): then each instruction's 64 rows of A or n columns of B are whole panels
            let k_major = shared.transposed != is_a;
            // the PTX ISA lets only 16-bit operands be transposed (MN-major) by wgmma; an MN-major
            // TF32 A is loaded into wgmma's A registers by the lanes instead
            if !k_major && input == ElementType::F32 {
                if is_a {
                    continue;
                }
                self.error(
                    operand_origin,
                    format!(
                        "TF32 wgmma reads operand B only K-major (k along its rows' contiguous columns); `{view}` holds N along them"
                    ),
                    Some(format!(
                        "store B as [N, K] (`shared::<f32>([BN, BK])`, copied from an [N, K] tensor: Bᵀ) and multiply `{0}.t()`, or compute Cᵀ = Bᵀ·Aᵀ: `mma(&{0}.t(), &a_s.t(), &mut acc_t)` (an MN-major A is loaded into wgmma's registers) and `copy(&acc_t.t(), c.tile(..))`",
                        shared.buffer
                    )),
                );
                continue;
            }
            let extent = if is_a { 64 } else { n };
            if !k_major && extent % panel_cols != 0 {
                self.error(
                    mma.origin,
                    format!(
                        "wgmma reads {extent} {} of `{view}` per instruction, stored along its rows in panels of {panel_cols} {input}: not whole panels",
                        if is_a { "rows" } else { "columns" }
                    ),
                    Some(format!("use a smaller swizzle span, or a warpgroup tile N that is a multiple of {panel_cols}")),
                );
            }
        }
    }

    /// `.unroll(n)`: n k-steps per loop trip must tile the k extent, and with double-buffered
    /// fragments n must be even, so every trip starts on the same register set.
    pub(super) fn mma_unroll(&mut self, mma: &Mma, plan: &MmaPlan) {
        let Some(steps) = mma.unroll.map(i64::from) else { return };
        let k = plan.k;
        if steps == 0 || k % steps != 0 {
            let divisors: Vec<String> = (1..=k).filter(|d| k % d == 0).map(|d| d.to_string()).collect();
            self.error(
                mma.unroll_origin,
                format!("`.unroll({steps})` does not divide the {k} k-steps of `{mma}`"),
                Some(format!("unroll by one of {}", divisors.join(", "))),
            );
        } else if mma.double_buffered_fragments && steps % 2 == 1 && steps != k {
            self.error(
                mma.unroll_origin,
                format!(
                    "`.unroll({steps})` with `.double_buffer_fragments()`: an odd number of k-steps per trip would start every other trip on the wrong register set"
                ),
                Some(format!("unroll by an even number, e.g. `.unroll({})`", if k % (steps * 2) == 0 { steps * 2 } else { k })),
            );
        }
    }

    /// With `vector = w > 1` the kernel asks for w-wide accesses; an mma operand read along
    /// its rows gets them unless the buffer's padding or swizzle misaligns the rows. That
    /// would silently fall back to narrower loads, so it is an error here. (Copies into such
    /// buffers keep their documented fallback to scalar shared accesses, shown in REPORT:
    /// the padded transposes rely on it.)
    pub(super) fn mma_vectors(&mut self, plan: &MmaPlan) {
        let declared = i64::from(self.kernel.config.vector.get());
        if declared == 1 {
            return;
        }
        for (is_a, operand) in [(true, &plan.a), (false, &plan.b)] {
            let (natural, actual) = plan.load_widths(is_a);
            let wanted = natural.min(declared);
            let OperandPlan::Shared(shared) = operand else { continue };
            if actual >= wanted {
                continue;
            }
            let Some(buffer) = self.kernel.shared(&shared.buffer) else { continue };
            let layout = shared.layout;
            let element = layout.element;
            let bits = wanted * i64::from(element.size_bytes()) * 8;
            let view = if shared.transposed { format!("{}.t()", shared.buffer) } else { shared.buffer.clone() };
            let (cause, fix) = match layout.swizzle {
                Some(unit) if unit % wanted != 0 => (
                    format!(
                        "`.swizzle({unit})` moves groups of {unit} {element} within each row of `{}`",
                        shared.buffer
                    ),
                    format!("use a swizzle unit that is a multiple of {wanted}"),
                ),
                _ => (
                    format!(
                        "`.pad({})` makes each row of `{}` {} elements ({} B) long",
                        layout.pad,
                        shared.buffer,
                        layout.stride(),
                        layout.stride() * i64::from(element.size_bytes())
                    ),
                    format!(
                        "pad by a multiple of {wanted} (`.pad({})`) to keep rows {}-byte aligned",
                        (layout.pad + wanted - 1) / wanted * wanted,
                        wanted * i64::from(element.size_bytes())
                    ),
                ),
            };
            self.error(
                buffer.origin,
                format!(
                    "{cause}, so `mma` cannot read a thread's {wanted} values of `{view}` with one {bits}-bit load: vector = {declared} asks for {bits}-bit access, and these reads would fall back to {}-bit ones",
                    actual * i64::from(element.size_bytes()) * 8
                ),
                Some(format!("{fix}, or declare vector = 1 to accept narrower reads")),
            );
        }
    }
}
