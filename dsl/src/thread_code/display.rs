//! Thread code rendered back as written: for messages and the comments of the CUDA source.

use super::*;

/// Rust-like rendering, as written (for messages and the comments of the CUDA source).
impl std::fmt::Display for ThreadExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |exprs: &[ThreadExpr]| exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
        match &self.kind {
            ThreadExprKind::Int { value, suffix } => {
                write!(f, "{value}{}", suffix.map(ElementType::rust_name).unwrap_or(""))
            }
            ThreadExprKind::Float { text, suffix } => {
                write!(f, "{text}{}", suffix.map(ElementType::rust_name).unwrap_or(""))
            }
            ThreadExprKind::Bool(value) => write!(f, "{value}"),
            ThreadExprKind::Infinity(element) => write!(f, "{element}::INFINITY"),
            ThreadExprKind::Name(name) => f.write_str(name),
            ThreadExprKind::Index { base, indices } if indices.len() == 1 => write!(f, "{base}[{}]", indices[0]),
            ThreadExprKind::Index { base, indices } => write!(f, "{base}[[{}]]", list(indices)),
            ThreadExprKind::Unary { op: UnaryOp::Neg, operand } => write!(f, "-{}", wrap(operand, u8::MAX)),
            ThreadExprKind::Unary { op: UnaryOp::Not, operand } => write!(f, "!{}", wrap(operand, u8::MAX)),
            ThreadExprKind::Binary { op, lhs, rhs } => {
                write!(f, "{} {} {}", wrap(lhs, op.precedence()), op.symbol(), wrap(rhs, op.precedence() + 1))
            }
            ThreadExprKind::Cast { value, to } => write!(f, "{} as {to}", wrap(value, u8::MAX)),
            ThreadExprKind::Call { function, args } => write!(f, "{}({})", function.name(), list(args)),
            ThreadExprKind::VectorLoad { tensor, row: None, index, start } => {
                write!(f, "{tensor}.{}({index})", start.method())
            }
            ThreadExprKind::VectorLoad { tensor, row: Some(row), index, start } => {
                write!(f, "{tensor}.{}([{row}, {index}])", start.method())
            }
            ThreadExprKind::AlignOffset { tensor, row: None, column } => write!(f, "{tensor}.align_offset({column})"),
            ThreadExprKind::AlignOffset { tensor, row: Some(row), column } => {
                write!(f, "{tensor}.align_offset([{row}, {column}])")
            }
            ThreadExprKind::LeadingDimension(tensor) => write!(f, "{tensor}.leading_dimension()"),
            ThreadExprKind::VectorSum(value) => write!(f, "{}.sum()", wrap(value, u8::MAX)),
            ThreadExprKind::FragmentSlot { fragment, query, slot } => write!(f, "{fragment}.{}({slot})", query.name()),
        }
    }
}

fn wrap(expr: &ThreadExpr, parent: u8) -> String {
    match &expr.kind {
        ThreadExprKind::Binary { op, .. } if op.precedence() < parent => format!("({expr})"),
        ThreadExprKind::Cast { .. } if parent == u8::MAX => format!("({expr})"),
        _ => expr.to_string(),
    }
}

impl std::fmt::Display for ThreadStatement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ThreadStatementKind::Let { name, mutable, ty, init } => {
                let ty = ty.map(|t| format!(": {t}")).unwrap_or_default();
                write!(f, "let {}{name}{ty} = {init};", if *mutable { "mut " } else { "" })
            }
            ThreadStatementKind::Assign { place, op, value } => {
                write!(f, "{place} {}= {value};", op.map(ThreadOp::symbol).unwrap_or(""))
            }
            ThreadStatementKind::AtomicAdd { place, value } => write!(f, "atomic_add(&{place}, {value});"),
            ThreadStatementKind::LetArray { name, mutable, len, init } => {
                write!(f, "let {}{name} = [{init}; {len}];", if *mutable { "mut " } else { "" })
            }
            ThreadStatementKind::BlockReductions { name, function, values } => {
                let calls: Vec<String> = values.iter().map(|v| format!("{}({v})", function.name())).collect();
                write!(f, "let {name} = [{}];", calls.join(", "))
            }
            ThreadStatementKind::If { condition, otherwise, .. } => {
                write!(f, "if {condition} {{ .. }}{}", if otherwise.is_empty() { "" } else { " else { .. }" })
            }
            ThreadStatementKind::For { var, start, end, step: None, .. } => {
                write!(f, "for {var} in {start}..{end} {{ .. }}")
            }
            ThreadStatementKind::For { var, start, end, step: Some(step), .. } => {
                write!(f, "for {var} in ({start}..{end}).step_by({step}) {{ .. }}")
            }
        }
    }
}
