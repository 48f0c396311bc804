//! The geometry of one tile copy: which elements thread t moves at each step, and where
//! each side keeps them. Codegen renders these formulas; the analyzer evaluates them.

use crate::{
    Access, Diagnostic, ElementMap, ElementType, Expr, FragmentLayout, GlobalTensor, ItemOrder, Kernel, Mma,
    MmaInstruction, Operand, ParamKind, Scope, SharedLayout, ThreadType, TileCopy, TileOperand, TypeEnv,
};

/// Registers a thread may spend staging one tile copy (elements of 4 or 8 bytes; 16-bit
/// elements pack two to a register, so twice as many of them fit).
pub const MAX_STAGED_PER_THREAD: i64 = 64;

/// The elements of `element` a thread may stage: [`MAX_STAGED_PER_THREAD`], twice that for
/// 16-bit elements, which pack two to a register.
///
/// ```
/// use tessera_dsl::{max_staged_elements, ElementType};
/// assert_eq!(max_staged_elements(ElementType::F32), 64);
/// assert_eq!(max_staged_elements(ElementType::BF16), 128);
/// ```
pub fn max_staged_elements(element: ElementType) -> i64 {
    if element.size_bytes() == 2 {
        2 * MAX_STAGED_PER_THREAD
    } else {
        MAX_STAGED_PER_THREAD
    }
}

/// A copy with every size resolved.
///
/// The destination tile is `rows × cols` (a 1-D tile is one row). Each thread moves
/// `steps` vectors of `vector` elements along a destination row; item `k = step · THREADS
/// + tid` is the k-th vector of the tile in `order`.
///
/// ```
/// use tessera_dsl::{CopyPlan, ItemOrder};
/// // a 32×32 tile, 256 threads, scalar: thread 33 starts at row 1, column 1
/// assert_eq!(CopyPlan::item_at(32, 32, 1, ItemOrder::RowMajor, 256, 0, 33), (1, 1));
/// assert_eq!(CopyPlan::item_at(32, 32, 1, ItemOrder::ColumnMajor, 256, 0, 33), (1, 1));
/// assert_eq!(CopyPlan::item_at(16, 64, 4, ItemOrder::ColumnMajor, 256, 0, 17), (1, 4));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    pub rows: i64,
    pub cols: i64,
    pub vector: i64,
    pub steps: i64,
    pub threads: i64,
    pub order: ItemOrder,
    pub element: ElementType,
    pub src: OperandPlan,
    pub dst: OperandPlan,
}

/// One side of a copy, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandPlan {
    Global(GlobalPlan),
    Shared(SharedPlan),
    /// A `.warp_tile(..)` fragment read in registers: operand A of a tensor-core `mma`
    /// (`mma(&p, &v_s, &mut o)`, FlashAttention's P·V), never a side of a copy.
    Fragment(FragmentPlan),
}

/// A register fragment as operand A of `mma`: each lane converts its own accumulators of the
/// fragment into the A operand's registers, nothing read from memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FragmentPlan {
    pub fragment: String,
    /// [rows, cols] as written.
    pub shape_exprs: Vec<Expr>,
    pub layout: FragmentLayout,
}

/// A tile of a global tensor, resolved. A tile of a tensor of rank 3 or 4 (`q.at([b, h])
/// .tile(..)`) is a 2-D tile of one of its matrices: `symbols` are the matrix's (the last two),
/// `batch` the indices that select it and `batch_symbols` the extents they index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalPlan {
    pub tensor: String,
    /// Shape symbols bounding the tile, outermost first: all of a 1-D or 2-D tensor's, the
    /// last two of a batched one.
    pub symbols: Vec<String>,
    /// `.at([..])`: the leading (batch) indices, outermost first; empty unless rank ≥ 3.
    pub batch: Vec<Expr>,
    /// The shape symbols the batch indices index (`B, H`), as many as `batch`.
    pub batch_symbols: Vec<String>,
    /// The tile's extent in the tensor's own orientation.
    pub extent: Vec<i64>,
    /// The same, as written (`[T, T]`), for code that names the constants.
    pub extent_exprs: Vec<Expr>,
    pub index: Vec<Expr>,
    pub transposed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedPlan {
    pub buffer: String,
    /// [rows, cols] as written.
    pub shape_exprs: Vec<Expr>,
    pub layout: SharedLayout,
    pub transposed: bool,
}

impl GlobalPlan {
    /// Whether the tile selects one matrix of a tensor of rank 3 or 4 (`.at([..])`).
    pub fn is_batched(&self) -> bool {
        !self.batch.is_empty()
    }

    /// The element offset of the selected matrix, as an expression of the batch indices and
    /// shape symbols without the leading dimension: `((b) * H + (h)) * SQ` for
    /// `q: (B, H, SQ, D)` at `[b, h]` (Horner over the batch dimensions, times the rows).
    /// Matrices are `rows · ld` elements apart, so the address adds this times `q_ld`.
    /// `None` for an unbatched tile.
    ///
    /// ```
    /// use tessera_dsl::{Expr, GlobalPlan};
    /// let plan = GlobalPlan {
    ///     tensor: "q".into(),
    ///     symbols: vec!["SQ".into(), "D".into()],
    ///     batch: vec![Expr::name("b"), Expr::name("h")],
    ///     batch_symbols: vec!["B".into(), "H".into()],
    ///     extent: vec![64, 64],
    ///     extent_exprs: vec![Expr::name("BQ"), Expr::name("D")],
    ///     index: vec![Expr::name("qt"), Expr::int(0)],
    ///     transposed: false,
    /// };
    /// assert_eq!(plan.batch_rows().map(|e| e.to_string()).as_deref(), Some("(b * H + h) * SQ"));
    /// ```
    pub fn batch_rows(&self) -> Option<Expr> {
        let rows = self.symbols.first()?;
        Some(Expr::binary(crate::BinaryOp::Mul, self.batch_index()?, Expr::name(rows.clone())))
    }

    /// The matrix a batched tile lies in, counting the leading dimensions' matrices in order:
    /// `b * H + h` for `q.at([b, h])` of a (B, H, ..) tensor.
    pub fn batch_index(&self) -> Option<Expr> {
        let (first, rest) = self.batch.split_first()?;
        let mut index = first.clone();
        for (next, symbol) in rest.iter().zip(self.batch_symbols.iter().skip(1)) {
            index = Expr::binary(
                crate::BinaryOp::Add,
                Expr::binary(crate::BinaryOp::Mul, index, Expr::name(symbol.clone())),
                next.clone(),
            );
        }
        Some(index)
    }
}

impl OperandPlan {
    /// (rows, cols) as the copy sees this side.
    pub fn logical_shape(&self) -> (i64, i64) {
        let (rows, cols, transposed) = match self {
            OperandPlan::Global(g) => match g.extent.as_slice() {
                [n] => (1, *n, g.transposed),
                [r, c] => (*r, *c, g.transposed),
                _ => (0, 0, false),
            },
            OperandPlan::Shared(s) => (s.layout.rows, s.layout.cols, s.transposed),
            OperandPlan::Fragment(f) => (f.layout.rows, f.layout.cols, false),
        };
        if transposed {
            (cols, rows)
        } else {
            (rows, cols)
        }
    }

    /// (rows, cols) as the copy sees this side, as written (`T`, `TILE`, `2 * T`).
    pub fn logical_shape_exprs(&self) -> Option<(Expr, Expr)> {
        let (rows, cols) = match self {
            OperandPlan::Global(g) => match g.extent_exprs.as_slice() {
                [n] => (Expr::int(1), n.clone()),
                [r, c] => (r.clone(), c.clone()),
                _ => return None,
            },
            OperandPlan::Shared(s) => match s.shape_exprs.as_slice() {
                [r, c] => (r.clone(), c.clone()),
                _ => return None,
            },
            OperandPlan::Fragment(f) => match f.shape_exprs.as_slice() {
                [r, c] => (r.clone(), c.clone()),
                _ => return None,
            },
        };
        Some(if self.transposed() { (cols, rows) } else { (rows, cols) })
    }

    pub fn transposed(&self) -> bool {
        match self {
            OperandPlan::Global(g) => g.transposed,
            OperandPlan::Shared(s) => s.transposed,
            OperandPlan::Fragment(_) => false,
        }
    }

    /// Where logical (row, col) is in the operand's own orientation.
    pub fn physical(&self, row: i64, col: i64) -> (i64, i64) {
        if self.transposed() {
            (col, row)
        } else {
            (row, col)
        }
    }

    /// Whether `width` logically consecutive elements of a row are one aligned access here.
    /// Global rows are aligned at launch (the runtime narrows the width otherwise).
    pub fn vector_ok(&self, width: i64) -> bool {
        if width == 1 {
            return true;
        }
        match self {
            OperandPlan::Global(g) => !g.transposed,
            OperandPlan::Shared(s) => !s.transposed && s.layout.vector_ok(width),
            OperandPlan::Fragment(_) => false,
        }
    }

    /// The shape symbol bounding each logical dimension (rows, cols), for global operands.
    pub fn logical_symbols(&self) -> Option<(Option<&str>, &str)> {
        let OperandPlan::Global(g) = self else { return None };
        match g.symbols.as_slice() {
            [n] => Some((None, n)),
            [r, c] if g.transposed => Some((Some(c), r)),
            [r, c] => Some((Some(r), c)),
            _ => None,
        }
    }
}

impl CopyPlan {
    /// The logical destination coordinates of the first element of item `step·threads + tid`.
    pub fn item_at(
        rows: i64,
        cols: i64,
        vector: i64,
        order: ItemOrder,
        threads: i64,
        step: i64,
        tid: i64,
    ) -> (i64, i64) {
        let item = step * threads + tid;
        match order {
            ItemOrder::RowMajor => {
                let per_row = cols / vector;
                (item / per_row, item % per_row * vector)
            }
            ItemOrder::ColumnMajor => (item % rows, item / rows * vector),
        }
    }

    pub fn item(&self, step: i64, tid: i64) -> (i64, i64) {
        Self::item_at(self.rows, self.cols, self.vector, self.order, self.threads, step, tid)
    }

    /// Resolves `copy` in `kernel`, or explains at the right spans why it cannot be done.
    pub fn new(kernel: &Kernel, copy: &TileCopy, scope: &Scope) -> Result<Self, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let src = operand(kernel, &copy.src, scope, &mut errors);
        let dst = operand(kernel, &copy.dst, scope, &mut errors);
        let (Some((src, src_type)), Some((dst, dst_type))) = (src, dst) else {
            return Err(errors);
        };
        errors.extend(read_only_destination(kernel, copy, dst_type));
        if src_type != dst_type {
            errors.push(Diagnostic::new(
                copy.origin,
                format!("copy from {src_type} to {dst_type}: the element types differ"),
            ));
        }
        let (rows, cols) = dst.logical_shape();
        if src.logical_shape() != (rows, cols) {
            let (r, c) = src.logical_shape();
            errors.push(
                Diagnostic::new(
                    copy.origin,
                    format!(
                        "copy between tiles of different shapes: {r}×{c} from `{}`, {rows}×{cols} to `{}`",
                        copy.src, copy.dst
                    ),
                )
                .with_hint("transpose one side with `.t()` or change an extent"),
            );
            return Err(errors);
        }
        if let (Some((src_row, src_col)), Some((dst_row, dst_col))) = (src.logical_symbols(), dst.logical_symbols()) {
            if src_row != dst_row || src_col != dst_col {
                let show = |row: Option<&str>, col: &str| row.map_or(col.to_string(), |r| format!("{r}, {col}"));
                errors.push(
                    Diagnostic::new(
                        copy.origin,
                        format!(
                            "copy from `{}` ({}) to `{}` ({}): the shape symbols differ, so the tiles' bounds disagree",
                            copy.src.name(),
                            show(src_row, src_col),
                            copy.dst.name(),
                            show(dst_row, dst_col)
                        ),
                    )
                    .with_hint(
                        "give both tensors the same shape symbols (a transpose swaps them: x: (R, C), y: (C, R))",
                    ),
                );
            }
        }
        let config = &kernel.config;
        let vector = i64::from(config.vector.get());
        if src_type.vector_type(config.vector).is_none() {
            errors.push(
                Diagnostic::new(
                    config.vector_origin,
                    format!(
                        "vector = {vector} with {src_type}: {} bytes per access exceed the 16-byte maximum",
                        vector * i64::from(src_type.size_bytes())
                    ),
                )
                .with_hint(format!("use vector = {}", 16 / src_type.size_bytes())),
            );
            return Err(errors);
        }
        let threads = config.threads.count() as i64;
        let elements = rows * cols;
        let per_pass = threads * vector;
        let extent_origin = copy.dst.origin();
        if per_pass > 0 && cols % vector != 0 {
            errors.push(
                Diagnostic::new(
                    extent_origin,
                    format!("rows of {cols} elements do not split into vectors of {vector}"),
                )
                .with_hint(format!(
                    "make the tile's columns a multiple of {vector} ({} or {}), or use a narrower vector",
                    cols / vector * vector,
                    (cols / vector + 1) * vector
                )),
            );
        } else if per_pass > 0 && elements % per_pass != 0 {
            let (what, origin) = match &copy.src {
                Operand::Global(tile) if tile.extent.len() == 1 => ("a tile of", tile.extent[0].origin),
                _ => ("a tile of", extent_origin),
            };
            errors.push(
                Diagnostic::new(
                    origin,
                    format!("{what} {elements} elements is not a multiple of threads × vector = {threads} × {vector} = {per_pass}"),
                )
                .with_hint(format!("make the tile a multiple of {per_pass}, e.g. {}", per_pass * ((elements + per_pass - 1) / per_pass).max(1))),
            );
        } else if per_pass > 0 && elements / threads > max_staged_elements(src_type) {
            let most = max_staged_elements(src_type);
            errors.push(
                Diagnostic::new(
                    extent_origin,
                    format!(
                        "a tile of {elements} elements stages {} elements per thread in registers; at most {most} of {src_type} fit without spilling",
                        elements / threads
                    ),
                )
                .with_hint(format!("use a tile of at most {} elements, or more threads", most * threads)),
            );
        }
        if !errors.is_empty() || per_pass == 0 {
            return Err(errors);
        }
        Ok(CopyPlan {
            rows,
            cols,
            vector,
            steps: elements / per_pass,
            threads,
            order: copy.order,
            element: src_type,
            src,
            dst,
        })
    }
}

fn operand(
    kernel: &Kernel,
    operand: &Operand,
    scope: &Scope,
    errors: &mut Vec<Diagnostic>,
) -> Option<(OperandPlan, ElementType)> {
    match operand {
        Operand::Global(tile) => {
            let Some(param) = kernel.param(&tile.tensor) else {
                errors.push(Diagnostic::new(tile.origin, format!("unknown tensor `{}`", tile.tensor)));
                return None;
            };
            let ParamKind::Global(tensor) = &param.kind else {
                errors.push(Diagnostic::new(
                    tile.origin,
                    format!("`{}` is a scalar; only global tensors have tiles", tile.tensor),
                ));
                return None;
            };
            let rank = tensor.rank();
            if !batch_indices_fit(tile, tensor, errors) {
                return None;
            }
            // after `.at([..])` the tile is a 2-D tile of one matrix
            let tile_rank = rank.min(2);
            if tile.index.len() != tile_rank || tile.extent.len() != tile_rank {
                let (what, hint) = if rank > 2 {
                    (
                        format!("`{}` has rank {rank}, so its tile of one matrix", tile.tensor),
                        "give 2 of each".to_string(),
                    )
                } else {
                    (format!("`{}` has rank {rank} but its tile", tile.tensor), format!("give {rank} of each"))
                };
                errors.push(
                    Diagnostic::new(
                        tile.origin,
                        format!("{what} gives {} indices and {} extents", tile.index.len(), tile.extent.len()),
                    )
                    .with_hint(hint),
                );
                return None;
            }
            if rank == 1 && tile.transposed {
                errors.push(Diagnostic::new(tile.origin, "a 1-D tile has nothing to transpose".to_string()));
                return None;
            }
            let extent = constant_extents(&tile.extent, scope, errors)?;
            Some((
                OperandPlan::Global(GlobalPlan {
                    tensor: tile.tensor.clone(),
                    symbols: tensor.shape[rank - tile_rank..].iter().map(|(s, _)| s.clone()).collect(),
                    batch: tile.at.clone(),
                    batch_symbols: tensor.shape[..rank - tile_rank].iter().map(|(s, _)| s.clone()).collect(),
                    extent,
                    extent_exprs: tile.extent.clone(),
                    index: tile.index.clone(),
                    transposed: tile.transposed,
                }),
                tensor.element,
            ))
        }
        Operand::Fragment(fragment) => {
            errors.push(Diagnostic::new(
                fragment.origin,
                format!(
                    "`{}` is a register fragment: it can only be copied to a global tile, `copy(&{}, c.tile(..))`",
                    fragment.fragment, fragment.fragment
                ),
            ));
            None
        }
        Operand::Shared(view) => {
            let Some(buffer) = kernel.shared(&view.buffer) else {
                errors.push(Diagnostic::new(view.origin, format!("unknown shared buffer `{}`", view.buffer)));
                return None;
            };
            let layout = SharedLayout::with_scope(buffer, scope)?;
            Some((
                OperandPlan::Shared(SharedPlan {
                    buffer: buffer.name.clone(),
                    shape_exprs: buffer.shape.clone(),
                    layout,
                    transposed: view.transposed,
                }),
                buffer.element,
            ))
        }
    }
}

/// Whether `tile` gives `.at([..])` exactly the batch indices `tensor` needs: rank − 2 of
/// them for a tensor of rank 3 or 4, none for a 1-D or 2-D one. Explains it otherwise.
fn batch_indices_fit(tile: &TileOperand, tensor: &GlobalTensor, errors: &mut Vec<Diagnostic>) -> bool {
    let rank = tensor.rank();
    let wanted = rank.saturating_sub(2);
    let given = tile.at.len();
    if given == wanted {
        return true;
    }
    let batch: Vec<&str> = tensor.shape[..wanted].iter().map(|(s, _)| s.as_str()).collect();
    let origin = tile.at.first().map_or(tile.origin, |first| first.origin);
    let diagnostic = if wanted == 0 {
        Diagnostic::new(
            origin,
            format!(
                "`{}` has rank {rank}: it is one {}, so `.at([..])` has no batch dimensions to index (this gives {given})",
                tile.tensor,
                if rank == 1 { "vector" } else { "matrix" }
            ),
        )
        .with_hint(format!("tile it directly: `{}.tile([..], [..])`", tile.tensor))
    } else if given == 0 {
        Diagnostic::new(
            tile.origin,
            format!(
                "`{}` has rank {rank}: a tile is 2-D, so it first selects one matrix with `.at([..])` of {wanted} indices ({})",
                tile.tensor,
                batch.join(", ")
            ),
        )
        .with_hint(format!(
            "write `{}.at([{}]).tile([..], [..])`",
            tile.tensor,
            batch.iter().map(|s| s.to_lowercase()).collect::<Vec<_>>().join(", ")
        ))
    } else {
        Diagnostic::new(
            origin,
            format!(
                "`{}` has rank {rank}: `.at([..])` takes {wanted} indices ({}), this gives {given}",
                tile.tensor,
                batch.join(", ")
            ),
        )
        .with_hint(format!(
            "give one index per batch dimension: `{}.at([{}])`",
            tile.tensor,
            batch.iter().map(|s| s.to_lowercase()).collect::<Vec<_>>().join(", ")
        ))
    };
    errors.push(diagnostic);
    false
}

/// `&p` as operand A of `mma`: a fragment, resolved; what it must be to feed the
/// instruction is checked by [`register_operand_errors`].
fn register_operand(
    kernel: &Kernel,
    operand: &crate::FragmentOperand,
    scope: &Scope,
    errors: &mut Vec<Diagnostic>,
) -> Option<(OperandPlan, ElementType)> {
    let Some(fragment) = kernel.fragment(&operand.fragment) else {
        errors.push(Diagnostic::new(operand.origin, format!("unknown fragment `{}`", operand.fragment)));
        return None;
    };
    let Some(layout) = FragmentLayout::with_scope(fragment, scope) else {
        errors.push(Diagnostic::new(fragment.origin, "the fragment's shape is not constant"));
        return None;
    };
    if operand.transposed {
        // a lane holds its rows' values: transposing them would move every value to another lane
        errors.push(
            Diagnostic::new(
                operand.origin,
                format!("`{}.t()`: a register fragment is multiplied as it is held, not transposed", operand.fragment),
            )
            .with_hint(format!("multiply `&{}` and transpose the other operand instead", operand.fragment)),
        );
        return None;
    }
    Some((
        OperandPlan::Fragment(FragmentPlan {
            fragment: fragment.name.clone(),
            shape_exprs: fragment.shape.clone(),
            layout,
        }),
        fragment.element,
    ))
}

/// What a register fragment `p` must be to be operand A of `mma(&p, b, &mut acc)`: each
/// lane's accumulators of `p` in the m16n8 layout are, two n-tiles at a time, exactly its A
/// registers of one 16-deep k-step — for `mma.sync.m16n8k16` (`p` and `acc` `.warp_tile(..)`
/// fragments) and for wgmma's register-A form (both `.warpgroup_tile(..)` ones, whose warps
/// hold 16 rows each in that layout). So the warps (warpgroups) each hold whole rows of `p`
/// (its columns, a multiple of 16), `acc` has the same rows per warp (warpgroup) in one column
/// of them (each multiplies its own rows of `p` into its own rows of `acc`), and B is 16-bit:
/// `p`'s f32 values are rounded to B's type.
fn register_operand_errors(mma: &Mma, p: &FragmentPlan, acc: &FragmentLayout, b_type: ElementType) -> Vec<Diagnostic> {
    let origin = mma.a.origin();
    let name = &p.fragment;
    let error = |message: String, hint: String| Diagnostic::new(origin, message).with_hint(hint);
    if *name == mma.acc {
        return vec![error(
            format!("`{mma}` reads the fragment `{name}` as A while it accumulates into it"),
            format!("accumulate into another fragment: `mma(&{name}, &b_s, &mut out)`"),
        )];
    }
    // the tile each warp (mma.sync) or warpgroup (wgmma) holds of `p` and of `acc`
    let (p_tile, acc_tile, method) = match (p.layout.warpgroup_tile, acc.warpgroup_tile) {
        (Some(p_tile), Some(acc_tile)) => (Some(p_tile), Some(acc_tile), "warpgroup_tile"),
        (None, None) => (p.layout.warp_tile, acc.warp_tile, "warp_tile"),
        (Some(_), None) => {
            return vec![error(
                format!(
                    "`{name}` is a `.warpgroup_tile(..)` fragment (wgmma's), so the `mma` it feeds runs on wgmma: the accumulator `{}` must be a `.warpgroup_tile(..)` fragment too",
                    mma.acc
                ),
                format!("declare `{}` with `.warpgroup_tile([64, {}])`", mma.acc, acc.cols),
            )]
        }
        (None, Some(_)) => {
            return vec![error(
                format!(
                    "`{}` is a `.warpgroup_tile(..)` fragment, so this `mma` runs on wgmma, whose register operand is in wgmma's accumulator layout: `{name}` must be a `.warpgroup_tile(..)` fragment too",
                    mma.acc
                ),
                format!("declare `{name}` as `fragment::<f32>([{}, {}]).warpgroup_tile([64, {}])`", p.layout.rows, p.layout.cols, p.layout.cols),
            )]
        }
    };
    let Some([p_rows, p_cols]) = p_tile else {
        return vec![error(
            format!(
                "`{name}` is a register operand of `mma`, so its values must be in mma.sync's accumulator layout: it must be a `.warp_tile(..)` fragment"
            ),
            format!("declare it as `fragment::<f32>([{}, {}]).warp_tile([16, {}])`", p.layout.rows, p.layout.cols, p.layout.cols),
        )];
    };
    let Some([acc_rows, acc_cols]) = acc_tile else {
        return vec![error(
            format!(
                "`{name}` is a register operand of `mma`, which only mma.sync takes: the accumulator `{}` must be a `.warp_tile(..)` fragment",
                mma.acc
            ),
            format!("declare `{}` with `.warp_tile([{p_rows}, {}])`", mma.acc, acc.cols),
        )];
    };
    let unit = if method == "warpgroup_tile" { "warpgroup" } else { "warp" };
    let mut errors = Vec::new();
    if p_cols != p.layout.cols {
        errors.push(error(
            format!(
                "each {unit} holds {p_cols} of the {} columns of `{name}` (`.{method}([{p_rows}, {p_cols}])`), but a {unit} multiplying its rows of `{name}` by B needs all {} (the k extent) in its own registers",
                p.layout.cols, p.layout.cols
            ),
            format!("give `{name}` one column of {unit}s: `.{method}([{p_rows}, {}])`", p.layout.cols),
        ));
    }
    if p_rows != acc_rows {
        errors.push(error(
            format!(
                "each {unit} holds {p_rows} rows of `{name}` but {acc_rows} of `{}`: a {unit} multiplies its own rows of `{name}` into the same rows of `{}`",
                mma.acc, mma.acc
            ),
            format!("use the same rows per {unit} in both, e.g. `.{method}([{p_rows}, ..])` for `{}`", mma.acc),
        ));
    } else if acc_cols != acc.cols {
        errors.push(error(
            format!(
                "`{}` has {} {unit}s side by side (`.{method}([{acc_rows}, {acc_cols}])` of {} columns), but only one {unit} holds each row of `{name}` in its registers: a register operand needs one column of {unit}s",
                mma.acc,
                acc.cols / acc_cols.max(1),
                acc.cols
            ),
            format!("give `{}` whole rows per {unit}: `.{method}([{acc_rows}, {}])`", mma.acc, acc.cols),
        ));
    }
    if p.layout.cols % 16 != 0 {
        errors.push(error(
            format!(
                "`{name}` has {} columns, the k extent of `{mma}`, but the tensor cores take k-steps of 16 (two of its 8-column tiles): {} is not a multiple of 16",
                p.layout.cols, p.layout.cols
            ),
            format!("make `{name}`'s columns a multiple of 16, e.g. {}", (p.layout.cols / 16).max(1) * 16),
        ));
    }
    if !b_type.is_half() {
        errors.push(Diagnostic::new(
            mma.b.origin(),
            format!(
                "`{name}` is rounded in registers to B's type and multiplied by a k16 tensor-core instruction, which takes f16 or bf16; B (`{}`) is {b_type}",
                mma.b
            ),
        ).with_hint("store B as bf16 or f16 (TF32's m16n8k8 takes A in a lane layout the accumulators do not have)".to_string()));
    } else if p.layout.element != ElementType::F32 {
        errors.push(error(
            format!(
                "`{name}` holds {} values, but a register operand is an f32 `.{method}(..)` fragment (an mma's accumulators), rounded to B's {b_type} in registers",
                p.layout.element
            ),
            format!("declare `{name}` as `fragment::<f32>(..)`"),
        ));
    }
    errors
}

fn constant_extents(extents: &[Expr], scope: &Scope, errors: &mut Vec<Diagnostic>) -> Option<Vec<i64>> {
    let mut values = Vec::new();
    for extent in extents {
        match extent.eval(scope) {
            Ok(value) if value > 0 => values.push(value),
            Ok(value) => {
                errors.push(Diagnostic::new(
                    extent.origin,
                    format!("tile extent `{extent}` is {value}; it must be positive"),
                ));
                return None;
            }
            Err(_) => {
                errors.push(
                    Diagnostic::new(extent.origin, format!("tile extent `{extent}` is not a compile-time constant"))
                        .with_hint("use a constant from consts(..), e.g. consts(TILE = 1024)"),
                );
                return None;
            }
        }
    }
    Some(values)
}

/// `mma(a, b, &mut acc)` resolved: the fragment, both operands and the k extent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmaPlan {
    pub acc: String,
    pub layout: FragmentLayout,
    pub a: OperandPlan,
    pub b: OperandPlan,
    /// The k extent each call accumulates over.
    pub k: i64,
    /// FFMA outer products, or a tensor-core instruction for a `.warp_tile(..)` fragment.
    pub instruction: MmaInstruction,
}

impl MmaPlan {
    pub fn new(kernel: &Kernel, mma: &Mma, scope: &Scope) -> Result<Self, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let Some(fragment) = kernel.fragment(&mma.acc) else {
            return Err(vec![Diagnostic::new(
                mma.origin,
                format!("`{}` is not a fragment declared with `fragment::<T>(..)`", mma.acc),
            )]);
        };
        let layout = FragmentLayout::with_scope(fragment, scope)
            .ok_or_else(|| vec![Diagnostic::new(fragment.origin, "the fragment's shape is not constant")])?;
        let a = match &mma.a {
            Operand::Fragment(p) => register_operand(kernel, p, scope, &mut errors),
            other => operand(kernel, other, scope, &mut errors),
        };
        let b = match &mma.b {
            Operand::Fragment(p) => {
                errors.push(
                    Diagnostic::new(
                        p.origin,
                        format!("`{}` is a register fragment: only operand A of `mma` may be one", p.fragment),
                    )
                    .with_hint(format!("multiply it from the left, `mma(&{}, &b_s, &mut acc)`", p.fragment)),
                );
                None
            }
            other => operand(kernel, other, scope, &mut errors),
        };
        let (Some((a, a_type)), Some((b, b_type))) = (a, b) else { return Err(errors) };
        if let OperandPlan::Fragment(p) = &a {
            errors.extend(register_operand_errors(mma, p, &layout, b_type));
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        // a register operand is rounded to B's type as it is packed into A's registers
        let a_type = if matches!(a, OperandPlan::Fragment(_)) { b_type } else { a_type };
        let (a_rows, k) = a.logical_shape();
        let (b_k, b_cols) = b.logical_shape();
        if a_rows != layout.rows || b_cols != layout.cols || k != b_k {
            errors.push(
                Diagnostic::new(
                    mma.origin,
                    format!(
                        "mma of a {a_rows}×{k} tile and a {b_k}×{b_cols} tile into the {}×{} fragment `{}`: the shapes do not chain",
                        layout.rows, layout.cols, mma.acc
                    ),
                )
                .with_hint(format!("a must be {}×K and b K×{}; transpose a shared buffer with `.t()` if it is stored the other way", layout.rows, layout.cols)),
            );
        }
        let warp_tile = layout.warp_tile.is_some();
        let instruction = if a_type != b_type {
            errors.push(Diagnostic::new(
                mma.b.origin(),
                format!("mma of {a_type} by {b_type}: both operands must have one element type"),
            ));
            None
        } else if let Some([_, n]) = layout.warpgroup_tile {
            MmaInstruction::choose_wgmma(a_type, layout.element, n, kernel.config.precision)
        } else {
            MmaInstruction::choose(warp_tile, a_type, layout.element, kernel.config.precision)
        };
        if instruction.is_none() && a_type == b_type {
            let message = if layout.warpgroup_tile.is_some() {
                format!(
                    "a `.warpgroup_tile(..)` fragment is multiplied by wgmma, which tessera runs on f16 or bf16 operands (or f32 as tf32) into f32; these are {a_type} into {}",
                    layout.element
                )
            } else if warp_tile {
                format!(
                    "a `.warp_tile(..)` fragment is multiplied on tensor cores (mma.sync), which take f16 or bf16 operands (or f32 as tf32) into f32; these are {a_type} into {}",
                    layout.element
                )
            } else if a_type.is_half() {
                format!(
                    "mma of {a_type} into the {} fragment `{}`, laid out per thread: 16-bit operands run on tensor cores, which need a fragment laid out per warp",
                    layout.element, mma.acc
                )
            } else {
                format!("mma of {a_type} into a {} fragment", layout.element)
            };
            let mut error = Diagnostic::new(mma.a.origin(), message);
            if a_type == ElementType::F32
                && (warp_tile || layout.warpgroup_tile.is_some())
                && kernel.config.precision == crate::Precision::Exact
            {
                error = error.with_hint(
                    "add `precision = tf32` to #[tile_kernel(..)] to multiply f32 operands on tensor cores as TF32 (10-bit mantissa), or use `.thread_tile(..)` for exact f32 on CUDA cores".to_string(),
                );
            } else if a_type.is_half() && !warp_tile {
                error = error.with_hint(format!(
                    "declare `{}` with `.warp_tile([WM, WN])` instead of `.thread_tile(..)`",
                    mma.acc
                ));
            }
            errors.push(error);
        }
        if let (true, Some(instruction)) = (errors.is_empty(), instruction) {
            Ok(MmaPlan { acc: mma.acc.clone(), layout, a, b, k, instruction })
        } else {
            Err(errors)
        }
    }
}

/// `copy(&acc, c.tile(..))` resolved: each thread stores its own values of the fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpiloguePlan {
    pub fragment: String,
    pub layout: FragmentLayout,
    pub dst: GlobalPlan,
    /// The destination's element type: the fragment's, or the 16-bit type a tensor-core
    /// fragment's f32 accumulators are rounded to as they are stored.
    pub stored: ElementType,
    pub vector: i64,
    pub axpby: Option<(String, String)>,
    /// `.map(..)`, type-checked: its body is of the fragment's element type.
    pub map: Option<ElementMap>,
    /// `copy(&acc.t(), ..)`: the fragment's row r, column c is the tile's row c, column r.
    pub transposed: bool,
}

impl EpiloguePlan {
    /// The tensors this epilogue's map reads at each value's own place that its 16-byte path
    /// loads as vectors where it stores ([`ElementMap::reads_in_place`]): 2-D, of the
    /// destination's 16-bit type, on a fragment that has the path.
    pub fn vector_reads_in_place(&self, kernel: &Kernel) -> Vec<String> {
        let Some(map) = &self.map else { return Vec::new() };
        let element = self.stored;
        if !element.is_half() || self.transposed || self.layout.wide_store_columns(element).is_none() {
            return Vec::new();
        }
        map.reads_in_place()
            .into_iter()
            .filter(|t| {
                kernel.param(t).and_then(|p| p.tensor()).is_some_and(|g| g.element == element && g.shape.len() == 2)
            })
            .collect()
    }

    /// Whether `.axpby(α, β)`'s C is read ahead of the stores on the 16-byte path (when β ≠ 0):
    /// a batch of a row slice's loads before its stores, where the pair path reads a pair at a
    /// time between them — a 16-bit C 16 bytes a lane where it stores, an f32 C the lanes' own
    /// pairs (8 bytes; 16 spilled V10) — on a fragment that has the path.
    pub fn reads_destination_in_place(&self) -> bool {
        self.axpby.is_some() && !self.transposed && self.layout.wide_store_columns(self.stored).is_some()
    }

    pub fn new(kernel: &Kernel, copy: &TileCopy, scope: &Scope) -> Result<Self, Vec<Diagnostic>> {
        let Operand::Fragment(source) = &copy.src else {
            return Err(vec![Diagnostic::new(copy.origin, "an epilogue copies a fragment")]);
        };
        let Some(fragment) = kernel.fragment(&source.fragment) else {
            return Err(vec![Diagnostic::new(source.origin, format!("unknown fragment `{}`", source.fragment))]);
        };
        let layout = FragmentLayout::with_scope(fragment, scope)
            .ok_or_else(|| vec![Diagnostic::new(fragment.origin, "the fragment's shape is not constant")])?;
        let mut errors = Vec::new();
        let (dst, stored) = match operand(kernel, &copy.dst, scope, &mut errors) {
            Some((OperandPlan::Global(dst), element)) if !dst.transposed && dst.extent.len() == 2 => {
                // a tensor-core fragment's f32 accumulators may be stored rounded to 16 bits
                let converts = layout.warp_tile.is_some() && element.is_float() && element != ElementType::F64;
                if element != layout.element && !converts {
                    errors.push(Diagnostic::new(
                        copy.origin,
                        format!("copy from a {} fragment to {element}", layout.element),
                    ));
                }
                (dst, element)
            }
            Some(_) => {
                errors.push(Diagnostic::new(
                    copy.dst.origin(),
                    "a fragment is copied to a 2-D global tile, not transposed",
                ));
                return Err(errors);
            }
            None => return Err(errors),
        };
        errors.extend(read_only_destination(kernel, copy, layout.element));
        let (rows, cols) = if source.transposed { (layout.cols, layout.rows) } else { (layout.rows, layout.cols) };
        if dst.extent != [rows, cols] {
            let view = if source.transposed { "the transposed fragment" } else { "the fragment" };
            errors.push(Diagnostic::new(
                copy.origin,
                format!(
                    "copy between tiles of different shapes: {view} is {rows}×{cols}, the tile {}×{}",
                    dst.extent[0], dst.extent[1]
                ),
            ));
        }
        if source.transposed && layout.warp_tile.is_none() {
            errors.push(
                Diagnostic::new(source.origin, format!("`{}.t()`: only a tensor-core fragment (`.warp_tile(..)` or `.warpgroup_tile(..)`) is stored transposed", source.fragment))
                    .with_hint("store a thread-tile fragment as it is: `copy(&acc, c.tile(..))`"),
            );
        }
        if source.transposed && copy.by_tma {
            errors.push(
                Diagnostic::new(
                    copy.origin,
                    format!(
                        "`copy(&{}.t(), ..).by_tma()`: TMA stores rows as the warps staged them, not transposed",
                        source.fragment
                    ),
                )
                .with_hint("drop `.by_tma()`: each lane then stores its values to their transposed places"),
            );
        }
        let vector = i64::from(kernel.config.vector.get());
        if layout.warp_tile.is_none() && layout.sub_cols() % vector != 0 {
            errors.push(
                Diagnostic::new(
                    kernel.config.vector_origin,
                    format!(
                        "vector = {vector} does not divide the {} columns of each thread's sub-tile",
                        layout.sub_cols()
                    ),
                )
                .with_hint("use a thread tile (or split) whose sub-tiles are a multiple of the vector width wide"),
            );
        }
        for scalar in copy.axpby.iter().flat_map(|(a, b)| [a, b]) {
            match kernel.param(scalar).map(|p| &p.kind) {
                Some(ParamKind::Scalar(element)) if *element == layout.element => {}
                _ => errors.push(
                    Diagnostic::new(
                        copy.origin,
                        format!("`{scalar}` in `.axpby(..)` is not a {} scalar parameter", layout.element),
                    )
                    .with_hint(format!("add `{scalar}: {}` to the kernel's parameters", layout.element)),
                ),
            }
        }
        if let Some(map) = &copy.map {
            errors.extend(check_element_map(kernel, map, layout.element));
        }
        if errors.is_empty() {
            Ok(EpiloguePlan {
                fragment: source.fragment.clone(),
                layout,
                dst,
                stored,
                vector,
                axpby: copy.axpby.clone(),
                transposed: source.transposed,
                map: copy.map.clone(),
            })
        } else {
            Err(errors)
        }
    }
}

/// The names in scope in the body of an element map: the kernel's parameters, shape symbols
/// and constants, and the map's value (`element`) and `row` and `col` (`i32`) unless `_`.
///
/// ```
/// use tessera_dsl::{element_map_env, ElementMap, ElementType, Kernel, Origin, ThreadExpr, ThreadType};
/// let map = ElementMap { value: "v".into(), row: "r".into(), col: "c".into(), body: ThreadExpr::name("v"), origin: Origin::default() };
/// let kernel = Kernel { name: "k".into(), doc: None, origin: Origin::default(), params: vec![],
///     config: tessera_dsl::Config::default(), body: vec![] };
/// let env = element_map_env(&kernel, &map, ElementType::F32);
/// assert_eq!(env.type_of(&ThreadExpr::name("c")), Ok(ThreadType::I32));
/// ```
pub fn element_map_env(kernel: &Kernel, map: &ElementMap, element: ElementType) -> TypeEnv {
    let mut env = TypeEnv::of_kernel(kernel);
    // `_` binds nothing
    for (name, ty) in
        [(&map.value, ThreadType::Scalar(element)), (&map.row, ThreadType::I32), (&map.col, ThreadType::I32)]
    {
        if name != "_" {
            env.bind_value(name, ty, false);
        }
    }
    env
}

/// Why `map` cannot be the element map of a fragment of `element`s, if it cannot.
fn check_element_map(kernel: &Kernel, map: &ElementMap, element: ElementType) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let outer = TypeEnv::of_kernel(kernel);
    let names = [&map.value, &map.row, &map.col];
    for (i, name) in names.iter().enumerate().filter(|(_, name)| name.as_str() != "_") {
        if outer.get(name).is_some() {
            errors.push(
                Diagnostic::new(
                    map.origin,
                    format!("`{name}` in `.map(|..|)` is already a parameter, shape symbol or constant of the kernel"),
                )
                .with_hint("give the closure's parameter another name"),
            );
        }
        if names[..i].contains(name) {
            errors.push(Diagnostic::new(map.origin, format!("`.map(|..|)` names `{name}` twice")));
        }
    }
    map.body.walk(&mut |e| {
        if let Some(collective) = e.warp_collective() {
            errors.push(Diagnostic::new(
                e.origin,
                format!(
                    "`{collective}` in an element map: the epilogue maps each value on its own, and bounds checks on edge tiles leave lanes out"
                ),
            ));
        }
    });
    if !errors.is_empty() {
        return errors;
    }
    let env = element_map_env(kernel, map, element);
    match env.type_with(&map.body, Some(ThreadType::Scalar(element))) {
        Ok(ty) if ty == ThreadType::Scalar(element) => {}
        Ok(ty) => errors.push(
            Diagnostic::new(map.body.origin, format!("the element map gives {ty}; the fragment holds {element}"))
                .with_hint(format!("convert it with `as {element}`")),
        ),
        Err(diagnostic) => errors.push(diagnostic),
    }
    errors
}

/// One register load of an mma operand: `width` consecutive values of a thread's tile,
/// starting at value `first` (0..thread_rows for a, 0..thread_cols for b).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentLoad {
    pub first: i64,
    pub width: i64,
}

impl MmaPlan {
    /// Whether a wgmma takes A from registers: a register fragment (FlashAttention's P), or a
    /// TF32 A stored MN-major (`b_s.t()` of a B stored [K, N] in Cᵀ = Bᵀ·Aᵀ), which the
    /// instruction cannot read through a descriptor and each lane loads from shared memory.
    ///
    /// ```
    /// use tessera_dsl::{ElementType, FragmentLayout, MmaInstruction, MmaPlan, OperandPlan, SharedLayout, SharedPlan};
    /// let f32_panels = |rows, cols| SharedLayout {
    ///     rows, cols, pad: 0, swizzle: None, swizzle_bytes: Some(128), panels: true, element: ElementType::F32,
    /// };
    /// // Cᵀ = Bᵀ·Aᵀ: `b_s`, B's tile stored [BK, BN], is A here (MN-major), `a_s` [BM, BK] is B (K-major)
    /// let b_s_t = SharedPlan { buffer: "b_s".into(), shape_exprs: vec![], layout: f32_panels(32, 128), transposed: true };
    /// let a_s_t = SharedPlan { buffer: "a_s".into(), shape_exprs: vec![], layout: f32_panels(256, 32), transposed: true };
    /// let layout = FragmentLayout {
    ///     rows: 128, cols: 256, thread_rows: 16, thread_cols: 64, split: [1, 1], warp_layout: None,
    ///     warp_tile: Some([16, 256]), warpgroup_tile: Some([64, 256]), element: ElementType::F32,
    /// };
    /// let plan = MmaPlan {
    ///     acc: "acc_t".into(), layout, a: OperandPlan::Shared(b_s_t), b: OperandPlan::Shared(a_s_t), k: 32,
    ///     instruction: MmaInstruction::Wgmma { input: ElementType::F32, n: 256 },
    /// };
    /// assert!(plan.wgmma_register_a());
    /// ```
    pub fn wgmma_register_a(&self) -> bool {
        matches!((&self.a, self.instruction), (OperandPlan::Fragment(_), MmaInstruction::Wgmma { .. }))
            || self.lanes_load_a()
    }

    /// Whether the lanes load a wgmma's A from shared memory into its registers, a k-step at a
    /// time: a TF32 A stored MN-major, which no descriptor reads (see [`Self::wgmma_register_a`];
    /// `mma(..).unroll(n)` then issues n k-steps a commit group).
    ///
    /// ```
    /// use tessera_dsl::{ElementType, MmaInstruction};
    /// # let layout = tessera_dsl::SharedLayout { rows: 32, cols: 128, pad: 0, swizzle: None, swizzle_bytes: Some(128), panels: true, element: ElementType::F32 };
    /// # let shared = |buffer: &str, transposed| tessera_dsl::OperandPlan::Shared(tessera_dsl::SharedPlan { buffer: buffer.into(), shape_exprs: vec![], layout, transposed });
    /// # let fragment = tessera_dsl::FragmentLayout { rows: 64, cols: 128, thread_rows: 16, thread_cols: 32, split: [1, 1], warp_layout: None, warp_tile: Some([16, 128]), warpgroup_tile: Some([64, 128]), element: ElementType::F32 };
    /// let tf32 = MmaInstruction::Wgmma { input: ElementType::F32, n: 128 };
    /// let plan = |a| tessera_dsl::MmaPlan { acc: "acc".into(), layout: fragment, a, b: shared("a_s", true), k: 32, instruction: tf32 };
    /// assert!(plan(shared("b_s", true)).lanes_load_a()); // `b_s.t()`: MN-major
    /// assert!(!plan(shared("a_s", false)).lanes_load_a()); // K-major: through a descriptor
    /// ```
    pub fn lanes_load_a(&self) -> bool {
        matches!(
            (&self.a, self.instruction),
            (OperandPlan::Shared(shared), MmaInstruction::Wgmma { input: ElementType::F32, .. }) if shared.transposed
        )
    }

    /// The loads that fill one k-step of a thread's column of `a` values.
    pub fn a_loads(&self) -> Vec<FragmentLoad> {
        let width = self.load_widths(true).1;
        (0..self.layout.thread_rows).step_by(width as usize).map(|first| FragmentLoad { first, width }).collect()
    }

    /// The loads that fill one k-step of a thread's row of `b` values.
    pub fn b_loads(&self) -> Vec<FragmentLoad> {
        let width = self.load_widths(false).1;
        (0..self.layout.thread_cols).step_by(width as usize).map(|first| FragmentLoad { first, width }).collect()
    }

    /// The vector width of the loads of operand a (`true`) or b: (what the thread's
    /// sub-tile allows on an unpadded, unswizzled buffer, what the buffer's layout allows).
    /// Both are 1 unless the operand is a shared buffer read along its rows: a seen
    /// transposed (`&a_s.t()`), b as stored.
    pub fn load_widths(&self, a: bool) -> (i64, i64) {
        let (operand, sub, contiguous) = if a {
            (&self.a, self.layout.sub_rows(), matches!(&self.a, OperandPlan::Shared(s) if s.transposed))
        } else {
            (&self.b, self.layout.sub_cols(), matches!(&self.b, OperandPlan::Shared(s) if !s.transposed))
        };
        let OperandPlan::Shared(shared) = operand else { return (1, 1) };
        if !contiguous {
            return (1, 1);
        }
        let bytes = i64::from(self.layout.element.size_bytes());
        let fits = |w: i64| sub % w == 0 && w * bytes <= 16;
        let natural = [4, 2, 1].into_iter().find(|w| fits(*w)).unwrap_or(1);
        let actual = [4, 2, 1].into_iter().find(|w| fits(*w) && shared.layout.vector_ok(*w)).unwrap_or(1);
        (natural, actual)
    }
}

/// The error for a copy into a `Global` (read-only) tensor, if `copy` is one.
fn read_only_destination(kernel: &Kernel, copy: &TileCopy, element: ElementType) -> Option<Diagnostic> {
    let Operand::Global(tile) = &copy.dst else { return None };
    let tensor = kernel.param(&tile.tensor).and_then(|p| p.tensor())?;
    (tensor.access == Access::ReadOnly).then(|| {
        Diagnostic::new(tile.origin, format!("`{}` is read-only, so a copy cannot write to it", tile.tensor))
            .with_hint(format!("declare it as `GlobalMut<{element}, ..>`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Origin, Param, ThreadBlock, VectorWidth};

    /// `copy(x<at>.tile([0, 0], [8, 32]), y.at([0, 0]).tile([0, 0], [8, 32]))` with x of `x_shape`
    /// and y of (B, H, R, C).
    fn batched_copy(x_shape: &[&str], at: Vec<Expr>) -> (Kernel, TileCopy) {
        let tensor = |name: &str, shape: &[&str], access| Param {
            name: name.into(),
            origin: Origin::default(),
            kind: ParamKind::Global(GlobalTensor {
                element: ElementType::F32,
                access,
                shape: shape.iter().map(|s| (s.to_string(), Origin::default())).collect(),
            }),
        };
        let tile = |tensor: &str, at: Vec<Expr>| {
            Operand::Global(TileOperand {
                tensor: tensor.into(),
                at,
                index: vec![Expr::int(0), Expr::int(0)],
                extent: vec![Expr::int(8), Expr::int(32)],
                transposed: false,
                origin: Origin::default(),
            })
        };
        let copy = TileCopy {
            src: tile("x", at),
            dst: tile("y", vec![Expr::name("b"), Expr::name("h")]),
            order: ItemOrder::RowMajor,
            axpby: None,
            map: None,
            by_tma: false,
            origin: Origin::default(),
        };
        let kernel = Kernel {
            name: "batched".into(),
            doc: None,
            origin: Origin::default(),
            params: vec![tensor("x", x_shape, Access::ReadOnly), tensor("y", &["B", "H", "R", "C"], Access::Writable)],
            config: Config { threads: ThreadBlock::linear(64), vector: VectorWidth::W4, ..Config::default() },
            body: vec![crate::Statement::Copy(copy.clone())],
        };
        (kernel, copy)
    }

    fn messages(x_shape: &[&str], at: Vec<Expr>) -> Vec<String> {
        let (kernel, copy) = batched_copy(x_shape, at);
        match CopyPlan::new(&kernel, &copy, &kernel.constant_scope()) {
            Ok(_) => vec![],
            Err(errors) => errors.into_iter().map(|d| d.message).collect(),
        }
    }

    #[test]
    fn a_batched_tile_is_a_2d_tile_of_the_matrix_its_indices_select() {
        let (kernel, copy) = batched_copy(&["B", "H", "R", "C"], vec![Expr::name("b"), Expr::name("h")]);
        let plan = CopyPlan::new(&kernel, &copy, &kernel.constant_scope()).unwrap();
        let OperandPlan::Global(x) = &plan.src else { panic!("{plan:?}") };
        assert_eq!(x.symbols, ["R", "C"], "bounded by the matrix's rows and columns");
        assert_eq!(x.batch_symbols, ["B", "H"]);
        assert!(x.is_batched());
        assert_eq!(x.batch_rows().unwrap().to_string(), "(b * H + h) * R");
        assert_eq!((plan.rows, plan.cols), (8, 32));
        assert_eq!(copy.to_string(), "copy(x.at([b, h]).tile([0, 0], [8, 32]), y.at([b, h]).tile([0, 0], [8, 32]))");
    }

    #[test]
    fn a_rank_3_tile_selects_its_matrix_with_one_index() {
        let (kernel, copy) = batched_copy(&["B", "R", "C"], vec![Expr::name("b")]);
        let plan = CopyPlan::new(&kernel, &copy, &kernel.constant_scope()).unwrap();
        let OperandPlan::Global(x) = &plan.src else { panic!("{plan:?}") };
        assert_eq!(x.batch_rows().unwrap().to_string(), "b * R");
    }

    #[test]
    fn a_rank_4_tile_without_at_says_which_batch_indices_it_needs() {
        assert_eq!(
            messages(&["B", "H", "R", "C"], vec![]),
            ["`x` has rank 4: a tile is 2-D, so it first selects one matrix with `.at([..])` of 2 indices (B, H)"]
        );
    }

    #[test]
    fn at_with_the_wrong_number_of_indices_counts_them() {
        assert_eq!(
            messages(&["B", "H", "R", "C"], vec![Expr::name("b")]),
            ["`x` has rank 4: `.at([..])` takes 2 indices (B, H), this gives 1"]
        );
    }

    #[test]
    fn at_on_a_matrix_has_nothing_to_select() {
        assert_eq!(
            messages(&["R", "C"], vec![Expr::int(0)]),
            ["`x` has rank 2: it is one matrix, so `.at([..])` has no batch dimensions to index (this gives 1)"]
        );
    }
}
