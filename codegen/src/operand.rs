//! How one side of a copy (or an mma operand) is addressed in C: lvalues of logical
//! (row, col), vector accesses where the layout allows them, bounds for the guarded path.

use tessera_dsl::{leading_dimension_name, BinaryOp, ElementType, Expr, OperandPlan};

use crate::c_expr;

/// The C view of one operand.
pub(crate) struct OperandText<'a> {
    plan: &'a OperandPlan,
    /// Names of the tile-origin variables, (row, col), for global operands.
    origin: (String, String),
    /// The name of the element offset of a batched tile's matrix (`q_batch0`), if batched.
    batch: Option<String>,
    /// Which copy of a double-buffered shared buffer (`stage`, `stage ^ 1`).
    stage: Option<String>,
}

pub(crate) const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

/// `col`, `col + 2`: an expression plus a constant offset.
pub(crate) fn plus(expr: &str, offset: i64) -> String {
    if offset == 0 {
        expr.to_string()
    } else {
        format!("{expr} + {offset}")
    }
}

/// Parenthesised if it is not a single name or number.
fn atom(expr: &str) -> String {
    if expr.contains(' ') {
        format!("({expr})")
    } else {
        expr.to_string()
    }
}

/// Whether `vector_type` is one of tessera's own (the 16-bit float vectors of `half_types.cu`,
/// an array `v` rather than CUDA's `.x .y .z .w`).
pub(crate) fn is_tessera_vector(vector_type: &str) -> bool {
    vector_type.starts_with("tessera_")
}

/// The member that names component `i` of a value of `vector_type`.
pub(crate) fn component(vector_type: &str, i: i64) -> String {
    if is_tessera_vector(vector_type) {
        format!(".v[{i}]")
    } else {
        format!(".{}", COMPONENTS[i as usize % 4])
    }
}

/// The literal zero of an element type.
pub(crate) fn zero(element: ElementType) -> &'static str {
    match element {
        ElementType::F32 => "0.0f",
        ElementType::F64 => "0.0",
        ElementType::I32 => "0",
        ElementType::U32 => "0u",
        // cuda_fp16.h / cuda_bf16.h: the conversions are constexpr-free, so name the bits
        ElementType::F16 => "__half(0.0f)",
        ElementType::BF16 => "__nv_bfloat16(0.0f)",
    }
}

/// The CUDA conversion rounding an f32 to the 16-bit float `element` (to nearest even):
/// `__float2half_rn` for f16, `__float2bfloat16_rn` for bf16.
pub(crate) fn round_to_half(element: ElementType) -> &'static str {
    if element == ElementType::F16 {
        "__float2half_rn"
    } else {
        "__float2bfloat16_rn"
    }
}

/// `value`, an `element`, as an f32 (as it is for f32).
pub(crate) fn widened(element: ElementType, value: &str) -> String {
    match element {
        ElementType::F16 => format!("__half2float({value})"),
        ElementType::BF16 => format!("__bfloat162float({value})"),
        _ => value.to_string(),
    }
}

/// The f32 `value` stored as an `element`: rounded once to a 16-bit float, as it is otherwise.
pub(crate) fn narrowed(element: ElementType, value: &str) -> String {
    match element.is_half() {
        true => format!("{}({value})", round_to_half(element)),
        false => value.to_string(),
    }
}

/// The type of two neighbouring `element`s stored at once (`float2`, `tessera_bf16x2`, ..).
pub(crate) fn pair_type(element: ElementType) -> &'static str {
    match element.is_half() {
        true => element.vector_type(tessera_dsl::VectorWidth::W2).unwrap_or("float2"),
        false => "float2",
    }
}

/// A `vector_type` value made of `parts`: CUDA's `make_float4(..)`, or a brace initialiser for
/// tessera's own 16-bit vectors (`tessera_bf16x8{{..}}`), which have no `make_` function.
pub(crate) fn vector_of(vector_type: &str, parts: &[impl AsRef<str>]) -> String {
    let parts: Vec<&str> = parts.iter().map(AsRef::as_ref).collect();
    if is_tessera_vector(vector_type) {
        format!("{vector_type}{{{{{}}}}}", parts.join(", "))
    } else {
        format!("make_{vector_type}({})", parts.join(", "))
    }
}

/// The name of the variable holding the element offset of a batched tile's matrix:
/// `q_batch0` for `q.at([b, h]).tile(..)`.
pub(crate) fn batch_origin_name(tensor: &str) -> String {
    format!("{tensor}_batch0")
}

impl<'a> OperandText<'a> {
    pub(crate) fn new(plan: &'a OperandPlan) -> Self {
        let origin = match plan {
            OperandPlan::Global(g) => (format!("{}_row0", g.tensor), format!("{}_col0", g.tensor)),
            OperandPlan::Shared(_) | OperandPlan::Fragment(_) => (String::new(), String::new()),
        };
        let batch = match plan {
            OperandPlan::Global(g) if g.is_batched() => Some(batch_origin_name(&g.tensor)),
            _ => None,
        };
        Self { plan, origin, batch, stage: None }
    }

    /// The same operand, addressing copy `stage` of its (double-buffered) shared buffer.
    pub(crate) fn with_stage(mut self, stage: Option<String>) -> Self {
        self.stage = stage;
        self
    }

    /// The same operand read inside a pipeline's stage `stage`: copy `stage` of its shared
    /// buffer where the pipeline fills the buffer (it has stages), the buffer itself where it
    /// is filled once before the loop (attention's Q tile beside the K and V stages).
    pub(crate) fn in_stage(self, kernel: &tessera_dsl::Kernel, stage: Option<&str>) -> Self {
        let staged = matches!(self.plan, OperandPlan::Shared(s) if kernel.buffer_stages(&s.buffer) > 1);
        self.with_stage(stage.filter(|_| staged).map(str::to_owned))
    }

    /// `(name, value)` of the tile-origin variables this operand needs: the tile's first row
    /// and column, and for a batched tile (`q.at([b, h])`) the element offset of its matrix,
    /// `q_batch0 = (b * H + h) * SQ * q_ld`.
    pub(crate) fn origin_declarations(&self) -> Vec<(String, String)> {
        let OperandPlan::Global(g) = self.plan else { return vec![] };
        let start = |index: &Expr, extent: &Expr| c_expr(&Expr::binary(BinaryOp::Mul, index.clone(), extent.clone()));
        let mut declarations = match (&self.batch, g.batch_rows()) {
            (Some(name), Some(rows)) => vec![(
                name.clone(),
                c_expr(&Expr::binary(BinaryOp::Mul, rows, Expr::name(leading_dimension_name(&g.tensor)))),
            )],
            _ => vec![],
        };
        match (g.index.as_slice(), g.extent_exprs.as_slice()) {
            ([i], [e]) => declarations.push((self.origin.1.clone(), start(i, e))),
            ([i, j], [e, f]) => {
                declarations.push((self.origin.0.clone(), start(i, e)));
                declarations.push((self.origin.1.clone(), start(j, f)));
            }
            _ => {}
        }
        declarations
    }

    /// The condition under which the whole tile lies inside the tensor (`None` for shared).
    pub(crate) fn whole_tile(&self) -> Option<String> {
        let OperandPlan::Global(g) = self.plan else { return None };
        let extents: Vec<String> = g.extent_exprs.iter().map(c_expr).collect();
        Some(match (g.symbols.as_slice(), extents.as_slice()) {
            ([n], [e]) => format!("{n} - {} >= {e}", self.origin.1),
            ([r, c], [e, f]) => format!("{r} - {} >= {e} && {c} - {} >= {f}", self.origin.0, self.origin.1),
            _ => "false".into(),
        })
    }

    /// The condition under which logical (row, col) lies inside the tensor.
    pub(crate) fn in_bounds_at(&self, row: &str, col: &str) -> Option<String> {
        let OperandPlan::Global(g) = self.plan else { return None };
        let (prow, pcol) = if g.transposed { (col, row) } else { (row, col) };
        Some(match g.symbols.as_slice() {
            [n] => format!("{} + {pcol} < {n}", self.origin.1),
            [r, c] => format!("{} + {} < {r} && {} + {} < {c}", self.origin.0, prow, self.origin.1, pcol),
            _ => "false".into(),
        })
    }

    /// How many logical rows and columns of the tensor lie from the tile's origin on (a 2-D
    /// global tensor only): `M - c_row0`, `N - c_col0`, swapped for a transposed view.
    pub(crate) fn rows_and_columns_left(&self) -> Option<(String, String)> {
        let OperandPlan::Global(g) = self.plan else { return None };
        let [r, c] = g.symbols.as_slice() else { return None };
        let (rows, cols) = (format!("{r} - {}", self.origin.0), format!("{c} - {}", self.origin.1));
        Some(if g.transposed { (cols, rows) } else { (rows, cols) })
    }

    /// The condition under which logical (row, col + offset) lies inside the tensor.
    pub(crate) fn in_bounds(&self, offset: i64) -> Option<String> {
        self.in_bounds_at("row", &plus("col", offset))
    }

    /// The lvalue of logical element (row, col), both C expressions.
    pub(crate) fn element_at(&self, row: &str, col: &str) -> String {
        let (prow, pcol) = if self.plan.transposed() { (col, row) } else { (row, col) };
        match self.plan {
            OperandPlan::Global(g) => match g.symbols.as_slice() {
                [_] => format!("{}[{} + {pcol}]", g.tensor, self.origin.1),
                [_, _] => format!(
                    "{}[{}({} + {prow}) * {} + {} + {pcol}]",
                    g.tensor,
                    self.batch.as_ref().map(|b| format!("{b} + ")).unwrap_or_default(),
                    self.origin.0,
                    leading_dimension_name(&g.tensor),
                    self.origin.1
                ),
                _ => String::new(),
            },
            OperandPlan::Shared(s) => {
                let column = match s.layout.swizzle {
                    None if s.layout.swizzle_bytes.is_some() => format!(
                        "tessera_swizzled<{}, {}, {}>({prow}, {pcol})",
                        s.layout.swizzle_bytes.unwrap_or(128),
                        s.layout.row_bytes(),
                        s.layout.element.size_bytes()
                    ),
                    None => pcol.to_string(),
                    Some(unit) => {
                        let groups = s.layout.cols / unit;
                        let (pcol, prow) = (atom(pcol), atom(prow));
                        if unit == 1 {
                            format!("{pcol} ^ ({prow} % {groups})")
                        } else {
                            format!("(({pcol} / {unit}) ^ ({prow} % {groups})) * {unit} + {pcol} % {unit}")
                        }
                    }
                };
                let stage = self.stage.as_ref().map(|s| format!("[{s}]")).unwrap_or_default();
                if let Some(panel_cols) = s.layout.panel_cols() {
                    // `.panels()`: [panel][row][column within the panel], swizzled in the panel
                    let pcol = atom(pcol);
                    return format!(
                        "{}{stage}[{pcol} / {panel_cols}][{prow}][tessera_swizzled<{}, {}, {}>({prow}, {pcol} % {panel_cols})]",
                        s.buffer,
                        s.layout.swizzle_bytes.unwrap_or(128),
                        s.layout.row_bytes(),
                        s.layout.element.size_bytes()
                    );
                }
                format!("{}{stage}[{prow}][{column}]", s.buffer)
            }
            // (a register operand is read by the mma's own packing of its accumulators, which
            // lie in mma.sync's layout: no expression names one element of the block tile)
            OperandPlan::Fragment(f) => format!("/* {} ({prow}, {pcol}) */", f.fragment),
        }
    }

    /// The element offset, as C, from logical element (r0, c0) to (r0 + row, c0 + col) on an
    /// affine operand (a global tile, or an unswizzled shared buffer); `row` and `col` are C
    /// expressions (`0`, `8`, `part_row + 32`).
    pub(crate) fn offset_between(&self, row: &str, col: &str) -> String {
        let (prow, pcol) = if self.plan.transposed() { (col, row) } else { (row, col) };
        let stride = match self.plan {
            OperandPlan::Global(g) => leading_dimension_name(&g.tensor),
            OperandPlan::Shared(s) => match s.shape_exprs.as_slice() {
                [_, cols] if s.layout.pad > 0 => format!("({} + {})", c_expr(cols), s.layout.pad),
                [_, cols] => c_expr(cols),
                _ => s.layout.stride().to_string(),
            },
            OperandPlan::Fragment(f) => f.layout.cols.to_string(),
        };
        let row_term = match prow {
            "0" => None,
            "1" => Some(stride),
            r => Some(format!("{} * {stride}", atom(r))),
        };
        match (row_term, pcol) {
            (None, c) => c.to_string(),
            (Some(r), "0") => r,
            (Some(r), c) => format!("{r} + {c}"),
        }
    }

    /// The lvalue of logical element (row, col + offset).
    pub(crate) fn element(&self, offset: i64) -> String {
        self.element_at("row", &plus("col", offset))
    }

    /// The expression loading `width` elements at logical (row, col) into a `vector_type`.
    pub(crate) fn load(&self, width: i64, vector_type: &str) -> String {
        if width == 1 {
            return self.element(0);
        }
        if self.plan.vector_ok(width) {
            return format!("*reinterpret_cast<const {vector_type}*>(&{})", self.element(0));
        }
        let parts: Vec<String> = (0..width).map(|i| self.element(i)).collect();
        vector_of(vector_type, &parts)
    }

    /// Statements loading `width` elements at logical (row, col) into `target`, each only if
    /// it lies inside the tensor (shared buffers are always whole).
    pub(crate) fn guarded_load(&self, width: i64, vector_type: &str, target: &str) -> Vec<String> {
        if self.in_bounds(0).is_none() {
            return vec![format!("{target} = {};", self.load(width, vector_type))];
        }
        (0..width)
            .map(|i| {
                let component = if width == 1 { String::new() } else { component(vector_type, i) };
                format!("if ({}) {target}{component} = {};", self.in_bounds(i).unwrap_or_default(), self.element(i))
            })
            .collect()
    }

    /// Statements storing `value` at logical (row, col), each element only if it lies inside
    /// the tensor.
    pub(crate) fn guarded_store(&self, width: i64, vector_type: &str, value: &str) -> Vec<String> {
        if self.in_bounds(0).is_none() {
            return self.store(width, vector_type, value);
        }
        (0..width)
            .map(|i| {
                let component = if width == 1 { String::new() } else { component(vector_type, i) };
                format!("if ({}) {} = {value}{component};", self.in_bounds(i).unwrap_or_default(), self.element(i))
            })
            .collect()
    }

    /// The statements storing `value` (a `vector_type` of `width`) at logical (row, col).
    pub(crate) fn store(&self, width: i64, vector_type: &str, value: &str) -> Vec<String> {
        if width == 1 {
            return vec![format!("{} = {value};", self.element(0))];
        }
        if self.plan.vector_ok(width) {
            return vec![format!("*reinterpret_cast<{vector_type}*>(&{}) = {value};", self.element(0))];
        }
        (0..width).map(|i| format!("{} = {value}{};", self.element(i), component(vector_type, i))).collect()
    }
}
