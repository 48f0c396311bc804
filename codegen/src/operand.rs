//! How one side of a copy is addressed in C: lvalues of logical (row, col), vector
//! accesses where the layout allows them, bounds for the guarded path.

use tessera_dsl::{BinaryOp, Expr, OperandPlan};

use crate::c_expr;

/// The C view of one copy operand.
pub(crate) struct OperandText<'a> {
    plan: &'a OperandPlan,
    /// Names of the tile-origin variables, (row, col), for global operands.
    origin: (String, String),
}

const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

impl<'a> OperandText<'a> {
    pub(crate) fn new(plan: &'a OperandPlan) -> Self {
        let origin = match plan {
            OperandPlan::Global(g) => (format!("{}_row0", g.tensor), format!("{}_col0", g.tensor)),
            OperandPlan::Shared(_) => (String::new(), String::new()),
        };
        Self { plan, origin }
    }

    /// `(name, value)` of the tile-origin variables this operand needs.
    pub(crate) fn origin_declarations(&self) -> Vec<(String, String)> {
        let OperandPlan::Global(g) = self.plan else { return vec![] };
        let start = |index: &Expr, extent: &Expr| c_expr(&Expr::binary(BinaryOp::Mul, index.clone(), extent.clone()));
        match (g.index.as_slice(), g.extent_exprs.as_slice()) {
            ([i], [e]) => vec![(self.origin.1.clone(), start(i, e))],
            ([i, j], [e, f]) => vec![(self.origin.0.clone(), start(i, e)), (self.origin.1.clone(), start(j, f))],
            _ => vec![],
        }
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

    /// The condition under which logical (row, col + offset) lies inside the tensor.
    pub(crate) fn in_bounds(&self, offset: i64) -> Option<String> {
        let OperandPlan::Global(g) = self.plan else { return None };
        let col = if offset == 0 { "col".to_string() } else { format!("col + {offset}") };
        let (prow, pcol) = if g.transposed { (col.as_str(), "row") } else { ("row", col.as_str()) };
        Some(match g.symbols.as_slice() {
            [n] => format!("{} + {pcol} < {n}", self.origin.1),
            [r, c] => format!("{} + {prow} < {r} && {} + {pcol} < {c}", self.origin.0, self.origin.1),
            _ => "false".into(),
        })
    }

    /// The lvalue of logical element (row, col + offset).
    pub(crate) fn element(&self, offset: i64) -> String {
        let col = if offset == 0 { "col".to_string() } else { format!("col + {offset}") };
        let (prow, pcol) = if self.plan.transposed() { (col, "row".to_string()) } else { ("row".to_string(), col) };
        match self.plan {
            OperandPlan::Global(g) => match g.symbols.as_slice() {
                [_] => format!("{}[{} + {pcol}]", g.tensor, self.origin.1),
                [_, c] => format!("{}[({} + {prow}) * {c} + {} + {pcol}]", g.tensor, self.origin.0, self.origin.1),
                _ => String::new(),
            },
            OperandPlan::Shared(s) => {
                let column = match s.layout.swizzle {
                    None => pcol,
                    Some(unit) => {
                        let groups = s.layout.cols / unit;
                        let pcol = if pcol.contains(' ') { format!("({pcol})") } else { pcol };
                        if unit == 1 {
                            format!("{pcol} ^ ({prow} % {groups})")
                        } else {
                            format!("(({pcol} / {unit}) ^ ({prow} % {groups})) * {unit} + {pcol} % {unit}")
                        }
                    }
                };
                format!("{}[{prow}][{column}]", s.buffer)
            }
        }
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
        format!("make_{vector_type}({})", parts.join(", "))
    }

    /// Statements loading `width` elements at logical (row, col) into `target`, each only if
    /// it lies inside the tensor (shared buffers are always whole).
    pub(crate) fn guarded_load(&self, width: i64, vector_type: &str, target: &str) -> Vec<String> {
        if self.in_bounds(0).is_none() {
            return vec![format!("{target} = {};", self.load(width, vector_type))];
        }
        (0..width)
            .map(|i| {
                let component = if width == 1 { String::new() } else { format!(".{}", COMPONENTS[i as usize]) };
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
                let component = if width == 1 { String::new() } else { format!(".{}", COMPONENTS[i as usize]) };
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
        (0..width).map(|i| format!("{} = {value}.{};", self.element(i), COMPONENTS[i as usize])).collect()
    }
}
