use tessera_dsl::{BinaryOp, Expr, ExprKind};

/// The C rendering of an integer expression, with only the parentheses C needs.
///
/// ```
/// use tessera_dsl::{BinaryOp, Expr};
/// let e = Expr::binary(BinaryOp::Mul, Expr::binary(BinaryOp::Add, Expr::name("a"), Expr::int(1)), Expr::name("T"));
/// assert_eq!(tessera_codegen::c_expr(&e), "(a + 1) * T");
/// ```
pub fn c_expr(expr: &Expr) -> String {
    render(expr, 0, false)
}

/// `parent` is the precedence of the enclosing operator; `right` marks its right operand,
/// where equal precedence needs parentheses too (`a - (b - c)`).
fn render(expr: &Expr, parent: u8, right: bool) -> String {
    let (text, precedence) = match &expr.kind {
        ExprKind::Int(value) => (value.to_string(), u8::MAX),
        ExprKind::Name(name) => (name.clone(), u8::MAX),
        ExprKind::Binary { op, lhs, rhs } => {
            let p = op.precedence();
            (format!("{} {} {}", render(lhs, p, false), op.symbol(), render(rhs, p, true)), p)
        }
        ExprKind::CeilDiv(a, b) => {
            let div = BinaryOp::Div.precedence();
            let add = BinaryOp::Add.precedence();
            let numerator = format!("({} + {} - 1)", render(a, add, false), render(b, add, true));
            // Precedence 0: parenthesised as any operand, so it reads as one quantity.
            (format!("{numerator} / {}", render(b, div, true)), 0)
        }
        ExprKind::Min(a, b) => (format!("min({}, {})", render(a, 0, false), render(b, 0, false)), u8::MAX),
        ExprKind::Max(a, b) => (format!("max({}, {})", render(a, 0, false), render(b, 0, false)), u8::MAX),
    };
    if precedence < parent || (right && precedence == parent && precedence != u8::MAX && parent > 0) {
        format!("({text})")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_dsl::BinaryOp::*;

    fn n(s: &str) -> Expr {
        Expr::name(s)
    }

    #[test]
    fn right_operand_of_equal_precedence_keeps_its_parentheses() {
        let e = Expr::binary(Sub, n("a"), Expr::binary(Sub, n("b"), n("c")));
        assert_eq!(c_expr(&e), "a - (b - c)");
        let e = Expr::binary(Sub, Expr::binary(Sub, n("a"), n("b")), n("c"));
        assert_eq!(c_expr(&e), "a - b - c");
    }

    #[test]
    fn ceil_div_inside_a_product_is_parenthesised() {
        let e = Expr::binary(Mul, Expr::ceil_div(n("N"), n("T")), n("T"));
        assert_eq!(c_expr(&e), "((N + T - 1) / T) * T");
    }

    #[test]
    fn ceil_div_of_a_sum_keeps_the_sum_whole() {
        let e = Expr::ceil_div(Expr::binary(Add, n("N"), n("M")), Expr::binary(Mul, n("A"), n("B")));
        assert_eq!(c_expr(&e), "(N + M + A * B - 1) / (A * B)");
    }
}
