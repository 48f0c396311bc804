use serde::{Deserialize, Serialize};

use crate::{Expr, Origin};

/// One statement of a kernel body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Statement {
    /// `let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));`
    Grid(GridBinding),
    /// `for t in grid_stride(cdiv(N, TILE)) { .. }`
    GridStride(GridStrideLoop),
    /// `copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));`
    Copy(TileCopy),
}

/// Binds one block index per grid dimension; the grid has exactly these extents.
///
/// ```
/// use tessera_dsl::{Expr, GridBinding, Origin};
/// let grid = GridBinding {
///     vars: vec!["bx".into()],
///     extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
///     origin: Origin::default(),
/// };
/// assert_eq!(grid.vars.len(), grid.extents.len());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridBinding {
    pub vars: Vec<String>,
    pub extents: Vec<Expr>,
    pub origin: Origin,
}

/// A loop over `count` tile indices spread across however many blocks the device keeps
/// resident: block b takes b, b + gridDim.x, b + 2·gridDim.x, ...
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridStrideLoop {
    pub var: String,
    pub count: Expr,
    pub body: Vec<Statement>,
    pub origin: Origin,
}

/// A copy of one tile from `src` to `dst`, spread over the block's threads with the
/// configured vector width; tiles that run past the tensor's end take a guarded path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileCopy {
    pub src: TileOperand,
    pub dst: TileOperand,
    pub origin: Origin,
}

/// `x.tile([index..], [extent..])`: the tile at tile coordinates `index` (in units of
/// `extent`) of the global tensor `tensor`.
///
/// ```
/// use tessera_dsl::{Expr, Origin, TileOperand};
/// let tile = TileOperand {
///     tensor: "x".into(),
///     index: vec![Expr::name("bx")],
///     extent: vec![Expr::name("TILE")],
///     origin: Origin::default(),
/// };
/// assert_eq!(tile.to_string(), "x.tile([bx], [TILE])");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileOperand {
    pub tensor: String,
    pub index: Vec<Expr>,
    pub extent: Vec<Expr>,
    pub origin: Origin,
}

impl std::fmt::Display for TileOperand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |exprs: &[Expr]| {
            exprs
                .iter()
                .map(Expr::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "{}.tile([{}], [{}])",
            self.tensor,
            list(&self.index),
            list(&self.extent)
        )
    }
}

impl std::fmt::Display for TileCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "copy({}, {})", self.src, self.dst)
    }
}
