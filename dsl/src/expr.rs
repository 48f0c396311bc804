use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Origin;

/// An integer expression over constants, shape symbols and bound variables:
/// `cdiv(N, TILE)`, `bx * TILE + 4`.
///
/// ```
/// use tessera_dsl::{Expr, Scope};
/// let tiles = Expr::ceil_div(Expr::name("N"), Expr::name("TILE"));
/// let scope = Scope::default().with("N", 1000).with("TILE", 256);
/// assert_eq!(tiles.eval(&scope), Ok(4));
/// assert_eq!(tiles.to_string(), "cdiv(N, TILE)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExprKind {
    Int(i64),
    /// A constant, a shape symbol or a variable bound by `grid(..)` / `grid_stride(..)`.
    Name(String),
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `cdiv(a, b)`: ⌈a / b⌉ for non-negative a and positive b.
    CeilDiv(Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Add => "+",
            Self::Sub => "-",
            Self::Mul => "*",
            Self::Div => "/",
            Self::Rem => "%",
        }
    }

    /// Binding strength, as in C and Rust: `*` `/` `%` bind tighter than `+` `-`.
    pub fn precedence(self) -> u8 {
        match self {
            Self::Add | Self::Sub => 1,
            Self::Mul | Self::Div | Self::Rem => 2,
        }
    }
}

/// Values of names, for evaluating an [`Expr`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    values: BTreeMap<String, i64>,
}

impl Scope {
    pub fn with(mut self, name: impl Into<String>, value: i64) -> Self {
        self.values.insert(name.into(), value);
        self
    }

    pub fn insert(&mut self, name: impl Into<String>, value: i64) {
        self.values.insert(name.into(), value);
    }

    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).copied()
    }
}

/// Why an expression has no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("`{name}` has no value here")]
    Unbound { name: String, origin: Origin },
    #[error("division by zero in `{expr}`")]
    DivisionByZero { expr: String, origin: Origin },
    #[error("`{expr}` overflows a 64-bit integer")]
    Overflow { expr: String, origin: Origin },
}

impl Expr {
    pub fn int(value: i64) -> Self {
        Self { kind: ExprKind::Int(value), origin: Origin::default() }
    }

    pub fn name(name: impl Into<String>) -> Self {
        Self { kind: ExprKind::Name(name.into()), origin: Origin::default() }
    }

    pub fn ceil_div(lhs: Expr, rhs: Expr) -> Self {
        Self { kind: ExprKind::CeilDiv(Box::new(lhs), Box::new(rhs)), origin: Origin::default() }
    }

    pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Self {
        Self { kind: ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, origin: Origin::default() }
    }

    /// The value of the expression with the names in `scope`.
    pub fn eval(&self, scope: &Scope) -> Result<i64, EvalError> {
        let overflow = || EvalError::Overflow { expr: self.to_string(), origin: self.origin };
        let zero = || EvalError::DivisionByZero { expr: self.to_string(), origin: self.origin };
        match &self.kind {
            ExprKind::Int(value) => Ok(*value),
            ExprKind::Name(name) => {
                scope.get(name).ok_or_else(|| EvalError::Unbound { name: name.clone(), origin: self.origin })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (lhs.eval(scope)?, rhs.eval(scope)?);
                match op {
                    BinaryOp::Add => a.checked_add(b).ok_or_else(overflow),
                    BinaryOp::Sub => a.checked_sub(b).ok_or_else(overflow),
                    BinaryOp::Mul => a.checked_mul(b).ok_or_else(overflow),
                    BinaryOp::Div => a.checked_div(b).ok_or_else(zero),
                    BinaryOp::Rem => a.checked_rem(b).ok_or_else(zero),
                }
            }
            ExprKind::CeilDiv(lhs, rhs) => {
                let (a, b) = (lhs.eval(scope)?, rhs.eval(scope)?);
                if b == 0 {
                    return Err(zero());
                }
                a.checked_add(b - 1).map(|sum| sum.div_euclid(b)).ok_or_else(overflow)
            }
            ExprKind::Min(lhs, rhs) => Ok(lhs.eval(scope)?.min(rhs.eval(scope)?)),
            ExprKind::Max(lhs, rhs) => Ok(lhs.eval(scope)?.max(rhs.eval(scope)?)),
        }
    }

    /// The expression with every `name` replaced by `replacement` (for the prefetch of the
    /// next pipeline step: `k` → `k + 1`).
    ///
    /// ```
    /// use tessera_dsl::{BinaryOp, Expr};
    /// let next = Expr::binary(BinaryOp::Add, Expr::name("k"), Expr::int(1));
    /// assert_eq!(Expr::binary(BinaryOp::Mul, Expr::name("k"), Expr::name("BK")).substitute("k", &next).to_string(), "(k + 1) * BK");
    /// ```
    pub fn substitute(&self, name: &str, replacement: &Expr) -> Expr {
        let kind = match &self.kind {
            ExprKind::Name(n) if n == name => return replacement.clone(),
            ExprKind::Int(_) | ExprKind::Name(_) => self.kind.clone(),
            ExprKind::Binary { op, lhs, rhs } => ExprKind::Binary {
                op: *op,
                lhs: Box::new(lhs.substitute(name, replacement)),
                rhs: Box::new(rhs.substitute(name, replacement)),
            },
            ExprKind::CeilDiv(a, b) => {
                ExprKind::CeilDiv(Box::new(a.substitute(name, replacement)), Box::new(b.substitute(name, replacement)))
            }
            ExprKind::Min(a, b) => {
                ExprKind::Min(Box::new(a.substitute(name, replacement)), Box::new(b.substitute(name, replacement)))
            }
            ExprKind::Max(a, b) => {
                ExprKind::Max(Box::new(a.substitute(name, replacement)), Box::new(b.substitute(name, replacement)))
            }
        };
        Expr { kind, origin: self.origin }
    }

    /// Every name the expression mentions, with where each is written.
    pub fn names(&self) -> Vec<(&str, Origin)> {
        let mut names = Vec::new();
        self.collect_names(&mut names);
        names
    }

    fn collect_names<'a>(&'a self, out: &mut Vec<(&'a str, Origin)>) {
        match &self.kind {
            ExprKind::Int(_) => {}
            ExprKind::Name(name) => out.push((name, self.origin)),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::CeilDiv(lhs, rhs)
            | ExprKind::Min(lhs, rhs)
            | ExprKind::Max(lhs, rhs) => {
                lhs.collect_names(out);
                rhs.collect_names(out);
            }
        }
    }
}

/// Rust-like rendering, as the user wrote it (for messages and comments).
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ExprKind::Int(value) => write!(f, "{value}"),
            ExprKind::Name(name) => f.write_str(name),
            ExprKind::Binary { op, lhs, rhs } => {
                let wrap = |e: &Expr, strict: bool| match &e.kind {
                    ExprKind::Binary { op: inner, .. }
                        if inner.precedence() < op.precedence()
                            || (strict && inner.precedence() == op.precedence()) =>
                    {
                        format!("({e})")
                    }
                    _ => e.to_string(),
                };
                write!(f, "{} {} {}", wrap(lhs, false), op.symbol(), wrap(rhs, true))
            }
            ExprKind::CeilDiv(a, b) => write!(f, "cdiv({a}, {b})"),
            ExprKind::Min(a, b) => write!(f, "min({a}, {b})"),
            ExprKind::Max(a, b) => write!(f, "max({a}, {b})"),
        }
    }
}
