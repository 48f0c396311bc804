//! `mma(..).deferred()`: a wgmma product left to the next k-tile of its pipeline, issued right
//! behind that tile's first `mma` and waited for before thread code next touches its
//! accumulator — FlashAttention-3's intra-warpgroup overlap, where the next tile's softmax runs
//! while the tensor cores do this tile's P·V.
//!
//! The schedule of k-tile j, with `first` the loop's first `mma` and `deferred` its last:
//! issue `first` (j), issue `deferred` (j − 1), wait for `first` only; the thread code up to
//! the first statement that touches `deferred`'s accumulator; wait for `deferred` (j − 1); the
//! rest of the thread code; `deferred`'s operands for tile j; free tile j − 1's stage. After
//! the loop, `deferred` (last tile) is issued and waited for, and the last stage freed. Moving the issue is sound when
//! nothing between the loop's head and `first` touches the accumulator, which
//! [`deferred_mma_errors`] checks with the other rules.

use crate::{Diagnostic, Kernel, MmaInstruction, MmaPlan, PipelineLoop, Statement, ThreadStatement};

/// Where a pipeline's deferred product sits: its body's first `mma` (which the deferred one is
/// issued behind), the deferred `mma`, and the index of the first statement after the first
/// `mma` that touches the deferred accumulator — thread code naming it, another `mma` into or
/// from it — where the wait goes (`None`: just before the deferred `mma` itself).
#[derive(Clone, Copy, Debug)]
pub struct DeferredMma<'k> {
    pub first: &'k crate::Mma,
    pub deferred: &'k crate::Mma,
    pub wait_before: Option<usize>,
}

impl<'k> DeferredMma<'k> {
    /// The deferred product of `pipeline`, if its body's last statement is one and a first `mma`
    /// precedes it (the validation reports every other shape).
    ///
    /// ```
    /// use tessera_dsl::{DeferredMma, Expr, Mma, Operand, Origin, PipelineLoop, SharedOperand, Statement};
    /// let shared = |buffer: &str| Operand::Shared(SharedOperand { buffer: buffer.into(), transposed: false, origin: Origin::default() });
    /// let mma = |a: &str, b: &str, acc: &str, deferred| Statement::Mma(Mma {
    ///     a: shared(a), b: shared(b), acc: acc.into(), double_buffered_fragments: false, unroll: None,
    ///     unroll_origin: Origin::default(), deferred, overwrite: false, origin: Origin::default() });
    /// let pipeline = PipelineLoop {
    ///     var: "j".into(), count: Expr::int(4), stages: 3, producers: Some(128), copies: Default::default(),
    ///     consumers: None, body: vec![mma("q_s", "k_s", "s", false), mma("s", "v_s", "o_acc", true)],
    ///     origin: Origin::default(),
    /// };
    /// let deferred = DeferredMma::of(&pipeline).unwrap();
    /// assert_eq!((deferred.first.acc.as_str(), deferred.deferred.acc.as_str()), ("s", "o_acc"));
    /// assert_eq!(deferred.wait_before, None); // no thread code touches o_acc: waited for at its own place
    /// ```
    pub fn of(pipeline: &'k PipelineLoop) -> Option<Self> {
        let Some(Statement::Mma(deferred)) = pipeline.body.last() else { return None };
        if !deferred.deferred {
            return None;
        }
        let first_index = pipeline.body.iter().position(|s| matches!(s, Statement::Mma(_)))?;
        let Statement::Mma(first) = &pipeline.body[first_index] else { return None };
        if std::ptr::eq(first, deferred) {
            return None;
        }
        // thread code that names the accumulator, or another product that accumulates into
        // it or reads it
        let touches = |s: &Statement| match s {
            Statement::Thread(thread) => thread.mentions(&deferred.acc),
            Statement::Mma(mma) if !std::ptr::eq(mma, deferred) => mma.acc == deferred.acc || mma.reads(&deferred.acc),
            _ => false,
        };
        let wait_before =
            pipeline.body.iter().enumerate().skip(first_index + 1).find_map(|(index, s)| touches(s).then_some(index));
        Some(Self { first, deferred, wait_before })
    }
}

/// The compile-time errors of every `.deferred()` product of `kernel`, with what to change.
pub(crate) fn deferred_mma_errors(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let scope = kernel.constant_scope();
    let statements = kernel.statements();
    for statement in &statements {
        let Statement::Mma(mma) = statement else { continue };
        if !mma.deferred {
            continue;
        }
        let error = |message: String, hint: &str| Diagnostic::new(mma.origin, message).with_hint(hint);
        let wgmma = MmaPlan::new(kernel, mma, &scope)
            .is_ok_and(|plan| matches!(plan.instruction, MmaInstruction::Wgmma { .. }));
        if !wgmma {
            errors.push(error(
                format!("`{mma}`: only a wgmma product can be deferred; mma.sync and FFMA products are done when the instruction returns"),
                "give the accumulator a `.warpgroup_tile([64, N])` and the kernel `target = sm_90a`, or drop `.deferred()`",
            ));
            continue;
        }
        let pipeline = statements.iter().find_map(|s| match s {
            Statement::Pipeline(p) if p.body.iter().any(|b| std::ptr::eq(b, *statement)) => Some(p),
            _ => None,
        });
        let Some(pipeline) = pipeline else {
            errors.push(error(
                format!("`{mma}` outside a pipeline: a deferred product is issued in the next k-tile"),
                "put it last in a `pipeline(.., producers = 128)` loop, or drop `.deferred()`",
            ));
            continue;
        };
        if pipeline.producers.is_none() {
            errors.push(error(
                format!("`{mma}` in a pipeline without producers: the compute threads' own cp.async ring refills the stage it reads while it still runs"),
                "add `producers = 128` to the pipeline (its stages are freed when the product is done), or drop `.deferred()`",
            ));
        }
        if pipeline.consumers.is_some_and(|groups| groups > 1) {
            errors.push(error(
                format!("`{mma}` in a pipeline with consumer groups: each group hands the tensor cores to the next at its tile's end, before a deferred product would be issued"),
                "drop `consumers = ..` or `.deferred()`",
            ));
        }
        if !pipeline.body.last().is_some_and(|last| std::ptr::eq(last, *statement)) {
            errors.push(error(
                format!(
                    "`{mma}` is not the last statement of its pipeline: what follows it would run before it is issued"
                ),
                "move it to the end of the loop's body",
            ));
            continue;
        }
        let deferred_count = pipeline.body.iter().filter(|s| matches!(s, Statement::Mma(m) if m.deferred)).count();
        if deferred_count > 1 {
            errors.push(error(
                format!(
                    "{deferred_count} deferred products in one pipeline: one is issued behind the loop's first `mma`"
                ),
                "defer only the last `mma`",
            ));
            continue;
        }
        let Some(first_index) = pipeline.body.iter().position(|s| matches!(s, Statement::Mma(m) if !m.deferred)) else {
            errors.push(error(
                format!("`{mma}` is its pipeline's only `mma`: a deferred product is issued behind the next k-tile's first one"),
                "drop `.deferred()` (a lone product overlaps nothing)",
            ));
            continue;
        };
        let Statement::Mma(first) = &pipeline.body[first_index] else { continue };
        let first_wgmma = MmaPlan::new(kernel, first, &scope)
            .is_ok_and(|plan| matches!(plan.instruction, MmaInstruction::Wgmma { .. }));
        if !first_wgmma {
            errors.push(error(
                format!("`{mma}` would be issued behind `{first}`, which is not a wgmma product: only wgmma groups can be waited for one at a time"),
                "make the loop's first product a wgmma one too, or drop `.deferred()`",
            ));
        }
        if first.acc == mma.acc {
            errors.push(error(
                format!("`{mma}` accumulates into `{}`, as the loop's first product does: issued behind it, it would change `{}` while that runs", mma.acc, mma.acc),
                "defer a product with an accumulator of its own, or drop `.deferred()`",
            ));
        }
        let touched = pipeline.body[..first_index]
            .iter()
            .find(|s| matches!(s, Statement::Thread(thread) if thread.mentions(&mma.acc)));
        if let Some(Statement::Thread(thread)) = touched {
            errors.push(
                Diagnostic::new(
                    thread.origin,
                    format!("thread code touches `{}` before the loop's first `mma`, but `{mma}` of the previous k-tile is only issued behind that product", mma.acc),
                )
                .with_hint(format!("move the statement after `{first}`")),
            );
        }
    }
    errors
}

impl ThreadStatement {
    /// Whether the statement names `name` anywhere: indexes it, reads a slot of it, or uses it
    /// whole.
    pub fn mentions(&self, name: &str) -> bool {
        let mut found = false;
        for expr in self.expressions() {
            expr.walk(&mut |e| {
                let named = match &e.kind {
                    crate::ThreadExprKind::Name(n) => n == name,
                    crate::ThreadExprKind::Index { base, .. } => base == name,
                    crate::ThreadExprKind::VectorLoad { tensor, .. } => tensor == name,
                    crate::ThreadExprKind::FragmentSlot { fragment, .. } => fragment == name,
                    _ => false,
                };
                found |= named;
            });
        }
        found
    }
}
