//! The checks a kernel must pass before any code is rendered. Each failure is a
//! [`Diagnostic`] at the offending source position, with the numbers and a fix.

mod body;
mod fragments;
mod limits;
mod mma;
mod pipelines;
mod shared;

use std::collections::{BTreeMap, BTreeSet};

/// The deepest `pipeline(.., stages = n)`: n − 1 tiles in flight through cp.async.
pub const MAX_PIPELINE_STAGES: u32 = 8;

use crate::{
    CopyPlan, Diagnostic, Diagnostics, ElementType, EpiloguePlan, Expr, ExprKind, Fragment, FragmentLayout, Kernel,
    Mma, MmaInstruction, MmaPlan, Operand, OperandPlan, Origin, Param, PipelineLoop, Scope, SharedBuffer, SharedLayout,
    Statement, Target, ThreadStatement, ThreadStatementKind, TileCopy, TypeEnv,
};

/// Registers a thread may give its accumulators and one row of each operand; the rest of
/// its 255 hold addresses, indices and prefetched tiles.
const MAX_FRAGMENT_REGISTERS: i64 = 200;

/// Names the generated CUDA uses itself; a parameter or constant may not take them.
const RESERVED: [&str; 14] = [
    "THREADS",
    "VECTOR",
    "STEPS",
    "ROWS",
    "COLS",
    "tid",
    "tile_start",
    "staged",
    "item",
    "thread_row",
    "thread_col",
    "stage",
    "a_frag",
    "b_frag",
];

/// Checks `kernel` against the limits of `target`; every problem found is reported, not
/// only the first.
///
/// ```
/// use tessera_dsl::{validate, Config, Kernel, Origin, Target, ThreadBlock};
/// let mut kernel = Kernel {
///     name: "too_wide".into(), doc: None, params: vec![], body: vec![],
///     config: Config { threads: ThreadBlock::linear(2048), ..Config::default() },
///     origin: Origin::default(),
/// };
/// let errors = validate(&kernel, &Target::SM_90).unwrap_err();
/// assert!(errors.to_string().contains("2048 threads per block exceed the limit of 1024"));
/// ```
pub fn validate(kernel: &Kernel, target: &Target) -> Result<(), Diagnostics> {
    let mut check = Checker {
        kernel,
        target,
        diagnostics: Diagnostics::default(),
        declared: Vec::new(),
        shared_bytes: 0,
        shared_reported: false,
        buffers: BTreeMap::new(),
    };
    check.target();
    check.threads();
    check.names();
    check.body();
    check.stream_k();
    check.pipeline_bodies();
    for error in crate::deferred_mma::deferred_mma_errors(kernel) {
        check.diagnostics.push(error);
    }
    check.staged_buffers_in_thread_code();
    check.producers();
    check.tma_copies();
    check.tma_stores();
    check.tile_order();
    check.consumers_need_producers();
    check.min_blocks();
    check.clusters();
    check.requirements();
    if check.diagnostics.is_empty() {
        Ok(())
    } else {
        Err(check.diagnostics)
    }
}

/// A tile index (one of `grid_vars`) that `pipeline`'s count names, and where: blocks that take
/// tiles by number (stream-K, producers) run the same k loop for every tile.
fn tile_index_in_count<'p>(pipeline: &'p PipelineLoop, grid_vars: &[String]) -> Option<(&'p str, Origin)> {
    pipeline.count.names().into_iter().find(|(name, _)| grid_vars.iter().any(|v| v == name))
}

struct Checker<'a> {
    kernel: &'a Kernel,
    target: &'a Target,
    diagnostics: Diagnostics,
    /// Shared buffers declared so far, in body order.
    declared: Vec<String>,
    shared_bytes: i64,
    /// Whether the shared-memory limit has been reported (once, at the buffer that crosses it).
    shared_reported: bool,
    /// buffer → ((row symbol, column symbol) of its layout, the tensor it was filled from)
    buffers: BTreeMap<String, ((String, String), String)>,
}

impl Checker<'_> {
    fn error(&mut self, origin: Origin, message: String, hint: Option<String>) {
        let mut diagnostic = Diagnostic::new(origin, message);
        diagnostic.hint = hint;
        self.diagnostics.push(diagnostic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Access, Config, Constant, ElementType, GlobalTensor, GridBinding, ItemOrder, ParamKind, ThreadBlock,
        TileOperand, VectorWidth,
    };

    fn copy_kernel(threads: u32, vector: VectorWidth, tile: i64) -> Kernel {
        let tensor = |name: &str, access| Param {
            name: name.into(),
            origin: Origin::default(),
            kind: ParamKind::Global(GlobalTensor {
                element: ElementType::F32,
                access,
                shape: vec![("N".into(), Origin::default())],
            }),
        };
        let operand = |tensor: &str| {
            Operand::Global(TileOperand {
                tensor: tensor.into(),
                at: vec![],
                index: vec![Expr::name("bx")],
                extent: vec![Expr::name("TILE")],
                transposed: false,
                origin: Origin::default(),
            })
        };
        Kernel {
            name: "copy".into(),
            doc: None,
            origin: Origin::default(),
            params: vec![tensor("x", Access::ReadOnly), tensor("y", Access::Writable)],
            config: Config {
                threads: ThreadBlock::linear(threads),
                vector,
                constants: vec![Constant::new("TILE", tile)],
                ..Config::default()
            },
            body: vec![
                Statement::Grid(GridBinding {
                    vars: vec!["bx".into()],
                    extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
                    stream_k: false,
                    grouped: None,
                    zigzag: false,
                    dynamic: false,
                    origin: Origin::default(),
                }),
                Statement::Copy(TileCopy {
                    src: operand("x"),
                    dst: operand("y"),
                    order: ItemOrder::RowMajor,
                    axpby: None,
                    map: None,
                    by_tma: false,
                    origin: Origin::default(),
                }),
            ],
        }
    }

    fn messages(kernel: &Kernel) -> Vec<String> {
        match validate(kernel, &Target::PORTABLE) {
            Ok(()) => vec![],
            Err(d) => d.iter().map(|d| d.message.clone()).collect(),
        }
    }

    #[test]
    fn a_valid_copy_has_no_diagnostics() {
        assert_eq!(messages(&copy_kernel(256, VectorWidth::W4, 1024)), Vec::<String>::new());
    }

    #[test]
    fn zero_threads_is_one_diagnostic_not_a_division_by_zero() {
        let found = messages(&copy_kernel(0, VectorWidth::W4, 1024));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("at least one thread"));
    }

    #[test]
    fn a_tile_that_would_spill_its_staging_registers_is_refused() {
        let found = messages(&copy_kernel(32, VectorWidth::W4, 4096));
        assert!(found.iter().any(|m| m.contains("stages 128 elements per thread")), "{found:?}");
        assert_eq!(messages(&copy_kernel(32, VectorWidth::W4, 2048)), Vec::<String>::new());
    }

    #[test]
    fn a_reserved_name_is_refused() {
        let mut kernel = copy_kernel(256, VectorWidth::W4, 1024);
        kernel.config.constants.push(Constant::new("THREADS", 3));
        assert!(messages(&kernel).iter().any(|m| m.contains("`THREADS` is reserved")));
    }

    #[test]
    fn the_name_of_a_matrix_leading_dimension_is_reserved() {
        let mut kernel = copy_kernel(256, VectorWidth::W4, 1024);
        // 1-D tensors get no leading dimension: the name is free
        kernel.config.constants.push(Constant::new("x_ld", 3));
        assert_eq!(messages(&kernel), Vec::<String>::new());
        if let ParamKind::Global(tensor) = &mut kernel.params[0].kind {
            tensor.shape.insert(0, ("R".into(), Origin::default()));
        }
        let found = messages(&kernel);
        assert!(
            found.iter().any(|m| m.contains("`x_ld` is reserved: the generated CUDA passes `x`'s leading dimension")),
            "{found:?}"
        );
    }
}
