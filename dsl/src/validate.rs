//! The checks a kernel must pass before any code is rendered. Each failure is a
//! [`Diagnostic`] at the offending source position, with the numbers and a fix.

use std::collections::BTreeSet;

use crate::{
    Access, Diagnostic, Diagnostics, ElementType, Expr, Kernel, Origin, Param, ParamKind, Scope,
    Statement, Target, TileCopy, TileOperand,
};

/// Names the generated CUDA uses itself; a parameter or constant may not take them.
const RESERVED: [&str; 5] = ["THREADS", "VECTOR", "tid", "tile_start", "staged"];

/// Registers a thread may spend staging one tile copy (elements of 4 or 8 bytes).
const MAX_STAGED_PER_THREAD: i64 = 64;

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
    };
    check.threads();
    check.names();
    check.body();
    if check.diagnostics.is_empty() {
        Ok(())
    } else {
        Err(check.diagnostics)
    }
}

struct Checker<'a> {
    kernel: &'a Kernel,
    target: &'a Target,
    diagnostics: Diagnostics,
}

impl Checker<'_> {
    fn error(&mut self, origin: Origin, message: String, hint: Option<String>) {
        let mut diagnostic = Diagnostic::new(origin, message);
        diagnostic.hint = hint;
        self.diagnostics.push(diagnostic);
    }

    fn threads(&mut self) {
        let block = self.kernel.config.threads;
        let origin = self.kernel.config.threads_origin;
        let dims = [block.x, block.y, block.z];
        if dims.contains(&0) {
            self.error(
                origin,
                format!("threads = {block}: a block needs at least one thread in every dimension"),
                Some("use a positive count such as threads = 256".into()),
            );
            return;
        }
        let limit = self.target.max_threads_per_block;
        if block.count() > u64::from(limit) {
            self.error(
                origin,
                format!(
                    "threads = {block}: {} threads per block exceed the limit of {limit} on {}",
                    block.count(),
                    self.target.label
                ),
                Some(format!(
                    "use at most {limit} threads and more blocks, e.g. threads = 256"
                )),
            );
        }
        for (axis, (dim, max)) in ["x", "y", "z"]
            .iter()
            .zip(dims.iter().zip(self.target.max_block_dims))
        {
            if *dim > max && block.count() <= u64::from(limit) {
                self.error(
                    origin,
                    format!(
                        "threads = {block}: {dim} threads along {axis} exceed the limit of {max}"
                    ),
                    None,
                );
            }
        }
    }

    /// Parameters, shape symbols and constants share one namespace in the emitted CUDA.
    fn names(&mut self) {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut declared: Vec<(&str, Origin, &str)> = Vec::new();
        for param in &self.kernel.params {
            declared.push((&param.name, param.origin, "parameter"));
        }
        let mut symbols_seen = BTreeSet::new();
        for tensor in self.kernel.params.iter().filter_map(Param::tensor) {
            for (symbol, origin) in &tensor.shape {
                if symbols_seen.insert(symbol.as_str()) {
                    declared.push((symbol, *origin, "shape symbol"));
                }
            }
        }
        for constant in &self.kernel.config.constants {
            declared.push((&constant.name, constant.origin, "constant"));
        }
        for (name, origin, what) in declared {
            if RESERVED.contains(&name) {
                self.error(
                    origin,
                    format!("`{name}` is reserved: the generated CUDA declares it itself"),
                    Some(format!("rename the {what}")),
                );
            } else if !seen.insert(name) {
                self.error(
                    origin,
                    format!("`{name}` is declared twice (here as a {what})"),
                    Some("parameters, shape symbols and constants need distinct names".into()),
                );
            }
        }
    }

    fn body(&mut self) {
        let grids: Vec<Origin> = self
            .kernel
            .body
            .iter()
            .filter_map(|s| match s {
                Statement::Grid(g) => Some(g.origin),
                Statement::GridStride(g) => Some(g.origin),
                Statement::Copy(_) => None,
            })
            .collect();
        if grids.is_empty() {
            self.error(
                self.kernel.origin,
                format!("kernel `{}` never says how blocks map to tiles", self.kernel.name),
                Some("start the body with `let (bx,) = grid(cdiv(N, TILE));` or a `for t in grid_stride(..)` loop".into()),
            );
        }
        for extra in grids.iter().skip(1) {
            self.error(
                *extra,
                "a kernel has one grid mapping; this is a second one".into(),
                Some("bind all block indices in one `grid(..)` call".into()),
            );
        }
        let mut scope = self.kernel.constant_scope();
        let mut bound: Vec<String> = self
            .kernel
            .shape_symbols()
            .iter()
            .map(|s| s.to_string())
            .collect();
        bound.extend(self.kernel.config.constants.iter().map(|c| c.name.clone()));
        let body = self.kernel.body.clone();
        self.statements(&body, &mut bound, &mut scope, false);
    }

    fn statements(
        &mut self,
        body: &[Statement],
        bound: &mut Vec<String>,
        scope: &mut Scope,
        nested: bool,
    ) {
        let mut grid_seen = false;
        for statement in body {
            match statement {
                Statement::Grid(grid) => {
                    if nested {
                        self.error(
                            grid.origin,
                            "`grid(..)` belongs at the top of the kernel body, not inside a loop"
                                .into(),
                            None,
                        );
                    }
                    if grid.vars.len() != grid.extents.len()
                        || grid.extents.is_empty()
                        || grid.extents.len() > 3
                    {
                        self.error(
                            grid.origin,
                            format!(
                                "`grid(..)` binds {} block indices to {} extents; it needs one index per extent, 1 to 3 of them",
                                grid.vars.len(),
                                grid.extents.len()
                            ),
                            None,
                        );
                    }
                    for extent in &grid.extents {
                        self.expression(extent, bound);
                    }
                    bound.extend(grid.vars.iter().cloned());
                    grid_seen = true;
                }
                Statement::GridStride(stride) => {
                    if nested {
                        self.error(
                            stride.origin,
                            "`grid_stride(..)` loops do not nest".into(),
                            None,
                        );
                    }
                    self.expression(&stride.count, bound);
                    let mut inner = bound.clone();
                    inner.push(stride.var.clone());
                    self.statements(&stride.body, &mut inner, scope, true);
                    grid_seen = true;
                }
                Statement::Copy(copy) => {
                    if !grid_seen && !nested {
                        self.error(
                            copy.origin,
                            "this copy comes before the grid mapping, so it has no block index"
                                .into(),
                            Some("put `let (bx,) = grid(..);` first".into()),
                        );
                    }
                    self.copy(copy, bound, scope);
                }
            }
        }
    }

    fn expression(&mut self, expr: &Expr, bound: &[String]) {
        for (name, origin) in expr.names() {
            if !bound.iter().any(|b| b == name) {
                let known = bound.join(", ");
                self.error(
                    origin,
                    format!("unknown name `{name}`"),
                    Some(format!("names in scope here: {known}")),
                );
            }
        }
    }

    fn operand(
        &mut self,
        operand: &TileOperand,
        bound: &[String],
        scope: &Scope,
    ) -> Option<(ElementType, Access, Vec<String>, Vec<i64>)> {
        for expr in operand.index.iter().chain(&operand.extent) {
            self.expression(expr, bound);
        }
        let Some(param) = self.kernel.param(&operand.tensor) else {
            self.error(
                operand.origin,
                format!("unknown tensor `{}`", operand.tensor),
                None,
            );
            return None;
        };
        let ParamKind::Global(tensor) = &param.kind else {
            self.error(
                operand.origin,
                format!(
                    "`{}` is a scalar; only global tensors have tiles",
                    operand.tensor
                ),
                None,
            );
            return None;
        };
        let rank = tensor.rank();
        if operand.index.len() != rank || operand.extent.len() != rank {
            self.error(
                operand.origin,
                format!(
                    "`{}` has rank {rank} but its tile gives {} indices and {} extents",
                    operand.tensor,
                    operand.index.len(),
                    operand.extent.len()
                ),
                Some(format!("give {rank} of each")),
            );
            return None;
        }
        let mut extents = Vec::new();
        for extent in &operand.extent {
            match extent.eval(scope) {
                Ok(value) if value > 0 => extents.push(value),
                Ok(value) => {
                    self.error(
                        extent.origin,
                        format!("tile extent `{extent}` is {value}; it must be positive"),
                        None,
                    );
                    return None;
                }
                Err(_) => {
                    self.error(
                        extent.origin,
                        format!("tile extent `{extent}` is not a compile-time constant"),
                        Some("use a constant from consts(..), e.g. consts(TILE = 1024)".into()),
                    );
                    return None;
                }
            }
        }
        let symbols = tensor.shape.iter().map(|(s, _)| s.clone()).collect();
        Some((tensor.element, tensor.access, symbols, extents))
    }

    fn copy(&mut self, copy: &TileCopy, bound: &[String], scope: &Scope) {
        let src = self.operand(&copy.src, bound, scope);
        let dst = self.operand(&copy.dst, bound, scope);
        let (
            Some((src_type, _, src_symbols, src_extents)),
            Some((dst_type, dst_access, dst_symbols, dst_extents)),
        ) = (src, dst)
        else {
            return;
        };
        if dst_access == Access::ReadOnly {
            self.error(
                copy.dst.origin,
                format!(
                    "`{}` is read-only, so a copy cannot write to it",
                    copy.dst.tensor
                ),
                Some(format!("declare it as `GlobalMut<{dst_type}, ..>`")),
            );
        }
        if src_type != dst_type {
            self.error(
                copy.origin,
                format!("copy from {src_type} to {dst_type}: the element types differ"),
                None,
            );
        }
        if src_extents != dst_extents {
            self.error(
                copy.origin,
                format!("copy between tiles of different shapes: {src_extents:?} from `{}`, {dst_extents:?} to `{}`", copy.src.tensor, copy.dst.tensor),
                None,
            );
            return;
        }
        if src_symbols != dst_symbols {
            self.error(
                copy.origin,
                format!(
                    "copy from `{}` ({}) to `{}` ({}): the shape symbols differ, so the tiles' bounds disagree",
                    copy.src.tensor,
                    src_symbols.join(", "),
                    copy.dst.tensor,
                    dst_symbols.join(", ")
                ),
                Some("give both tensors the same shape symbols".into()),
            );
        }
        if src_extents.len() != 1 {
            self.error(
                copy.origin,
                format!(
                    "tile copies of rank {} are not supported yet; tessera copies 1-D tiles",
                    src_extents.len()
                ),
                None,
            );
            return;
        }
        let config = &self.kernel.config;
        let width = config.vector;
        if src_type.vector_type(width).is_none() {
            self.error(
                config.vector_origin,
                format!(
                    "vector = {width} with {src_type}: {} bytes per access exceed the 16-byte maximum",
                    width.get() * src_type.size_bytes()
                ),
                Some(format!("use vector = {}", 16 / src_type.size_bytes())),
            );
            return;
        }
        let elements = src_extents.iter().product::<i64>();
        let per_pass = config.threads.count() as i64 * i64::from(width.get());
        // A zero thread count is reported by `threads()`; there is no pass to divide by.
        if per_pass > 0 && elements % per_pass != 0 {
            self.error(
                copy.src.extent[0].origin,
                format!(
                    "a tile of {elements} elements is not a multiple of threads × vector = {} × {width} = {per_pass}",
                    config.threads.count()
                ),
                Some(format!("make the tile a multiple of {per_pass}, e.g. {}", per_pass * ((elements + per_pass - 1) / per_pass).max(1))),
            );
        }
        // Each thread stages its share of a whole tile in registers before storing it.
        let staged = elements / config.threads.count().max(1) as i64;
        if per_pass > 0 && staged > MAX_STAGED_PER_THREAD {
            self.error(
                copy.src.extent[0].origin,
                format!(
                    "a tile of {elements} elements stages {staged} elements per thread in registers; at most {MAX_STAGED_PER_THREAD} fit without spilling"
                ),
                Some(format!("use a tile of at most {} elements, or more threads", MAX_STAGED_PER_THREAD * config.threads.count() as i64)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Config, Constant, ElementType, GlobalTensor, GridBinding, ThreadBlock, VectorWidth,
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
        let operand = |tensor: &str| TileOperand {
            tensor: tensor.into(),
            index: vec![Expr::name("bx")],
            extent: vec![Expr::name("TILE")],
            origin: Origin::default(),
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
                    origin: Origin::default(),
                }),
                Statement::Copy(TileCopy {
                    src: operand("x"),
                    dst: operand("y"),
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
        assert_eq!(
            messages(&copy_kernel(256, VectorWidth::W4, 1024)),
            Vec::<String>::new()
        );
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
        assert!(
            found
                .iter()
                .any(|m| m.contains("stages 128 elements per thread")),
            "{found:?}"
        );
        assert_eq!(
            messages(&copy_kernel(32, VectorWidth::W4, 2048)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_reserved_name_is_refused() {
        let mut kernel = copy_kernel(256, VectorWidth::W4, 1024);
        kernel.config.constants.push(Constant::new("THREADS", 3));
        assert!(messages(&kernel)
            .iter()
            .any(|m| m.contains("`THREADS` is reserved")));
    }
}
