//! The rendering of a `mma(..).deferred()` product in its pipeline (the schedule is
//! [`tessera_dsl::DeferredMma`]'s): the loop's first mma with the previous k-tile's deferred
//! product issued behind it, the wait before thread code next touches its accumulator, its A
//! registers packed where it is written, and the drain after the loop.

use tessera_dsl::{Kernel, MmaPlan, OperandPlan, PipelineLoop, Statement, TypeEnv};

use crate::gemm::{k_extent_name, mma_source_with};
use crate::statement::{indent, invalid_plan, render_scoped};
use crate::tensor_core::{wgmma_part_source, WgmmaPart};
use crate::RenderError;

/// A pipeline body with a deferred product, rendered: the compute blocks in order, what the
/// compute threads declare before the loop, and what ends it.
pub(crate) struct DeferredCompute {
    pub(crate) compute: Vec<String>,
    pub(crate) declarations: Vec<String>,
    pub(crate) drain: Vec<String>,
}

/// The compute blocks of `pipeline`'s body (its copies are the producers'), thread code
/// seeing `env`.
pub(crate) fn compute(
    kernel: &Kernel,
    pipeline: &PipelineLoop,
    deferred: &tessera_dsl::DeferredMma<'_>,
    env: &mut TypeEnv,
) -> Result<DeferredCompute, RenderError> {
    let parts = DeferredParts::new(kernel, pipeline, deferred)?;
    let var = &pipeline.var;
    let mut compute = Vec::new();
    for (index, statement) in pipeline.body.iter().enumerate() {
        if deferred.wait_before == Some(index) {
            compute.push(indent(&parts.wait, 2));
        }
        match statement {
            Statement::Copy(_) => {}
            Statement::Mma(mma) if std::ptr::eq(mma, deferred.first) => {
                let part =
                    WgmmaPart::WithDeferredBehind { condition: format!("{var} > 0"), behind: parts.issue.clone() };
                compute.push(indent(&wgmma_part_source(kernel, mma, "stage", part)?, 2));
            }
            Statement::Mma(mma) if std::ptr::eq(mma, deferred.deferred) => {
                if deferred.wait_before.is_none() {
                    compute.push(indent(&parts.wait, 2));
                }
                compute.push(indent(&wgmma_part_source(kernel, mma, "stage", WgmmaPart::Operands)?, 2));
            }
            Statement::Mma(mma) => compute.push(indent(&mma_source_with(kernel, mma, Some("stage"), vec![], 0)?, 2)),
            other => compute.extend(render_scoped(kernel, std::slice::from_ref(other), 2, env)?),
        }
    }
    Ok(DeferredCompute { compute, declarations: parts.declarations, drain: parts.drain })
}

/// The three places a `.deferred()` product adds to its pipeline (see
/// [`tessera_dsl::DeferredMma`]): its issue behind the next k-tile's first mma (from the
/// previous tile's stage), the wait for it before its accumulator is touched, and the drain
/// after the loop (the last tile's product issued and waited for); with the registers its A
/// operand keeps from one k-tile to the next.
struct DeferredParts {
    declarations: Vec<String>,
    issue: String,
    wait: String,
    drain: Vec<String>,
}

impl DeferredParts {
    fn new(
        kernel: &Kernel,
        pipeline: &PipelineLoop,
        deferred: &tessera_dsl::DeferredMma<'_>,
    ) -> Result<Self, RenderError> {
        let mma = deferred.deferred;
        let acc = &mma.acc;
        let plan = MmaPlan::new(kernel, mma, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
        let registers = matches!(plan.a, OperandPlan::Fragment(_));
        let k_name = k_extent_name(kernel, mma, &plan);
        let mut declarations = Vec::new();
        if registers {
            declarations.push(format!("// `{mma}`'s A registers: packed in one k-tile, read by its product"));
            declarations.push("// until the next k-tile waits for it".to_string());
            declarations.push(format!("unsigned a_frag[{k_name} / 16][4];"));
        }
        let issue = format!(
            "const int deferred_stage = (drained - 1) % STAGES;  // the previous k-tile's\n{}",
            wgmma_part_source(kernel, mma, "deferred_stage", WgmmaPart::Issue)?
        );
        let mut wait = vec![
            format!("// `{acc}` is touched next: the previous k-tile's `{mma}` must be done"),
            "tessera_wgmma_wait<0>();".to_string(),
            format!("tessera_wgmma_fence_operands({acc}[0]);"),
        ];
        if registers {
            wait.push("tessera_wgmma_fence_operands(a_frag);  // its A registers may change from here".into());
        }
        let var = &pipeline.var;
        let mut drain = vec![format!("// the last k-tile's `{mma}`")];
        drain.push(format!("if ({var}_tiles > 0) {{"));
        drain.extend(indent(&issue, 1).lines().map(str::to_owned));
        drain.push("}".into());
        drain.extend(crate::tensor_core::wgmma_drain(kernel, std::iter::once(acc.as_str())));
        Ok(Self { declarations, issue, wait: wait.join("\n"), drain })
    }
}
