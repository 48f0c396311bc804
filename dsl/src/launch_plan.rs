//! From the shapes of the arguments to the numbers a launch needs: the value of every shape
//! symbol and the grid. Pure arithmetic, shared by every backend.

use crate::{EvalError, GridMapping, Kernel, Scope};

/// The most elements a tensor may have. Kernels index with 32-bit integers; the margin
/// below 2³¹ keeps `index + tile` and `cdiv(N, TILE)` from overflowing for any tile the
/// validator accepts (at most 64 × 1024 elements).
pub const MAX_ELEMENTS: i64 = i32::MAX as i64 - (1 << 20);

/// The shape of one tensor argument, named after its parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorShape<'a> {
    pub param: &'a str,
    pub dims: &'a [usize],
    /// Elements from the start of one row to the next for a 2-D tensor whose rows lie
    /// apart (a sub-matrix); `None` (or the column count) when dense.
    pub leading_dimension: Option<usize>,
}

/// The value each shape symbol took at a launch, in the kernel's symbol order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShapeBinding {
    pub values: Vec<(String, i64)>,
}

impl ShapeBinding {
    pub fn get(&self, symbol: &str) -> Option<i64> {
        self.values.iter().find(|(s, _)| s == symbol).map(|(_, v)| *v)
    }
}

/// What a launch needs: grid and block dimensions and the symbol values.
///
/// ```
/// use tessera_dsl::*;
/// let kernel = Kernel {
///     name: "copy".into(), doc: None, origin: Origin::default(),
///     params: vec![Param {
///         name: "x".into(), origin: Origin::default(),
///         kind: ParamKind::Global(GlobalTensor {
///             element: ElementType::F32, access: Access::ReadOnly,
///             shape: vec![("N".into(), Origin::default())],
///         }),
///     }],
///     config: Config { constants: vec![Constant::new("TILE", 1024)], ..Config::default() },
///     body: vec![Statement::Grid(GridBinding {
///         vars: vec!["bx".into()],
///         extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
///         stream_k: false, grouped: None, zigzag: false, dynamic: false,
///         origin: Origin::default(),
///     })],
/// };
/// let plan = LaunchPlan::new(&kernel, &[TensorShape { param: "x", dims: &[4097], leading_dimension: None }], 0).unwrap();
/// assert_eq!(plan.grid, [5, 1, 1]);
/// assert_eq!(plan.binding.get("N"), Some(4097));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub binding: ShapeBinding,
}

/// Why the arguments do not fit the kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchPlanError {
    #[error("kernel `{kernel}` has no tensor parameter `{param}`")]
    UnknownParam { kernel: String, param: String },
    #[error("no shape was given for tensor parameter `{param}`")]
    MissingShape { param: String },
    #[error("`{param}` is declared with rank {expected} but the argument has rank {actual} (shape {shape:?})")]
    RankMismatch { param: String, expected: usize, actual: usize, shape: Vec<usize> },
    #[error(
        "shape symbol `{symbol}` is {first_value} from `{first_param}` (dimension {first_dim}) \
         but {value} from `{param}` (dimension {dim})"
    )]
    ShapeMismatch {
        symbol: String,
        first_param: String,
        first_dim: usize,
        first_value: usize,
        param: String,
        dim: usize,
        value: usize,
    },
    #[error("`{param}` spans {elements} elements (or has a dimension or leading dimension that large); tessera indexes with 32-bit integers, so at most {limit}")]
    TensorTooLarge { param: String, elements: u128, limit: i64 },
    #[error("the grid needs {blocks} blocks along {axis}, over the limit of {limit}")]
    GridTooLarge { axis: char, blocks: i64, limit: i64 },
    #[error("cannot compute the grid: {0}")]
    Grid(#[from] EvalError),
    #[error("kernel `{kernel}` has no grid mapping")]
    NoGrid { kernel: String },
    #[error("stream-K over {tiles} tiles of {k_tiles} k-tiles each: {} k-tiles in all, over the {} an int numbers", (*tiles as i128) * (*k_tiles as i128), i32::MAX)]
    StreamKTooLarge { tiles: i64, k_tiles: i64 },
    #[error("the grid of {grid:?} blocks is not a whole number of clusters of {cluster:?} (`cluster = ..`): each of its dimensions must be a multiple of the cluster's")]
    ClusterGrid { grid: [u32; 3], cluster: [u32; 3] },
    #[error("the kernel requires {requirement}, which does not hold with {values}")]
    Requirement { requirement: String, values: String },
}

/// Checks `kernel`'s `require(..)`s on shape symbols (`require(C <= ITEMS * THREADS)`) with the
/// symbols' `values`, as a launch does before anything runs; returns the scope they hold in
/// (the kernel's constants, `THREADS`, `VECTOR` and the symbols).
///
/// ```
/// use tessera_dsl::*;
/// let requirement = Requirement { lhs: Expr::name("C"), relation: Relation::Le, rhs: Expr::name("TILE"), origin: Origin::default() };
/// let kernel = Kernel {
///     name: "k".into(), doc: None, body: vec![], origin: Origin::default(),
///     params: vec![Param {
///         name: "x".into(), origin: Origin::default(),
///         kind: ParamKind::Global(GlobalTensor {
///             element: ElementType::F32, access: Access::ReadOnly,
///             shape: vec![("C".into(), Origin::default())],
///         }),
///     }],
///     config: Config { constants: vec![Constant::new("TILE", 64)], requirements: vec![requirement], ..Config::default() },
/// };
/// assert!(check_launch_requirements(&kernel, &[("C".into(), 64)]).is_ok());
/// let error = check_launch_requirements(&kernel, &[("C".into(), 65)]).unwrap_err();
/// assert_eq!(error.to_string(), "the kernel requires C <= TILE, which does not hold with C = 65, TILE = 64");
/// ```
pub fn check_launch_requirements(kernel: &Kernel, values: &[(String, i64)]) -> Result<Scope, LaunchPlanError> {
    let mut scope: Scope = kernel.constant_scope();
    for (symbol, value) in values {
        scope.insert(symbol.clone(), *value);
    }
    for requirement in kernel.launch_requirements() {
        if !requirement.holds(&scope)? {
            return Err(LaunchPlanError::Requirement {
                requirement: requirement.to_string(),
                values: requirement.values(&scope),
            });
        }
    }
    Ok(scope)
}

impl LaunchPlan {
    /// Binds the shape symbols from `shapes` and evaluates the grid. `resident_blocks` caps a
    /// grid-stride or stream-K kernel's grid (the device's SM count × blocks per SM); it is
    /// ignored by kernels with an exact `grid(..)`.
    pub fn new(kernel: &Kernel, shapes: &[TensorShape<'_>], resident_blocks: u32) -> Result<Self, LaunchPlanError> {
        let binding = bind_shapes(kernel, shapes)?;
        let scope = check_launch_requirements(kernel, &binding.values)?;
        let limits = [(u32::MAX >> 1) as i64, 65_535, 65_535];
        let mut grid = [1u32; 3];
        let extents: Vec<i64> = match kernel.grid_mapping() {
            Some(GridMapping::Exact(extents)) => extents.iter().map(|e| e.eval(&scope)).collect::<Result<_, _>>()?,
            Some(GridMapping::Strided(count)) => {
                vec![count.eval(&scope)?.min(i64::from(resident_blocks.max(1)))]
            }
            Some(GridMapping::StreamK { tiles, k_tiles }) => {
                let tiles =
                    tiles.iter().try_fold(1i64, |product, e| Ok::<_, EvalError>(product * e.eval(&scope)?.max(0)))?;
                // every resident block takes a share, but no block is left without a k-tile
                // (a K of 0 still stores β·C: one block per tile)
                let k_tiles = k_tiles.eval(&scope)?.max(1);
                let work = tiles.saturating_mul(k_tiles);
                if work > i64::from(i32::MAX) {
                    // the kernel numbers k-tiles across all tiles with an int
                    return Err(LaunchPlanError::StreamKTooLarge { tiles, k_tiles });
                }
                vec![work.min(i64::from(resident_blocks.max(1)))]
            }
            Some(GridMapping::Persistent { tiles }) => match kernel.cluster_tiles() {
                // whole clusters, each taking cluster tiles (its blocks' neighbouring tiles)
                Some(cluster) => {
                    let tiles = tiles.iter().enumerate().try_fold(1i64, |product, (dim, e)| {
                        Ok::<_, EvalError>(product * cluster.cluster_extent(dim, e.eval(&scope)?.max(0)))
                    })?;
                    let blocks = i64::from(cluster.blocks);
                    let clusters = (i64::from(resident_blocks) / blocks).max(1);
                    vec![tiles.min(clusters) * blocks]
                }
                None => {
                    let tiles = tiles
                        .iter()
                        .try_fold(1i64, |product, e| Ok::<_, EvalError>(product * e.eval(&scope)?.max(0)))?;
                    vec![tiles.min(i64::from(resident_blocks.max(1)))]
                }
            },
            None => return Err(LaunchPlanError::NoGrid { kernel: kernel.name.clone() }),
        };
        for (axis, (blocks, limit)) in extents.iter().zip(limits).enumerate() {
            if *blocks > limit {
                return Err(LaunchPlanError::GridTooLarge { axis: ['x', 'y', 'z'][axis], blocks: *blocks, limit });
            }
            grid[axis] = (*blocks).max(0) as u32;
        }
        if let Some(cluster) = kernel.launch_cluster() {
            if grid.iter().zip(cluster).any(|(&blocks, size)| size > 0 && blocks % size != 0) {
                return Err(LaunchPlanError::ClusterGrid { grid, cluster });
            }
        }
        let threads = kernel.config.threads;
        // a warp-specialised pipeline's producer threads follow the block's own along x
        let x = threads.x.saturating_add(kernel.producer_threads());
        Ok(Self { grid, block: [x, threads.y, threads.z], binding })
    }

    /// A grid with no blocks: nothing to launch (a zero-length tensor).
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0)
    }
}

fn bind_shapes(kernel: &Kernel, shapes: &[TensorShape<'_>]) -> Result<ShapeBinding, LaunchPlanError> {
    for shape in shapes {
        if kernel.param(shape.param).and_then(|p| p.tensor()).is_none() {
            return Err(LaunchPlanError::UnknownParam { kernel: kernel.name.clone(), param: shape.param.into() });
        }
    }
    // symbol -> (value, param, dim) of its first binding
    let mut first: Vec<(String, usize, String, usize)> = Vec::new();
    for param in &kernel.params {
        let Some(tensor) = param.tensor() else {
            continue;
        };
        let shape = shapes
            .iter()
            .find(|s| s.param == param.name)
            .ok_or_else(|| LaunchPlanError::MissingShape { param: param.name.clone() })?;
        if shape.dims.len() != tensor.rank() {
            return Err(LaunchPlanError::RankMismatch {
                param: param.name.clone(),
                expected: tensor.rank(),
                actual: shape.dims.len(),
                shape: shape.dims.to_vec(),
            });
        }
        // the elements a kernel's indices reach: (rows − 1)·ld + cols for a strided matrix, and
        // for a batch of matrices (rank 3 or 4, each rows·ld after the one before) the rows of
        // all of them
        let mut elements: u128 = shape.dims.iter().map(|&d| d as u128).product();
        let ld = shape.leading_dimension.filter(|_| shape.dims.len() >= 2);
        if let (Some(ld), Some((cols, outer))) = (ld, shape.dims.split_last()) {
            let rows: u128 = outer.iter().map(|&d| d as u128).product();
            if rows > 0 && *cols > 0 {
                elements = elements.max((rows - 1) * ld as u128 + *cols as u128);
            }
        }
        let widest = shape.dims.iter().copied().chain(ld).max().unwrap_or(0);
        if elements > MAX_ELEMENTS as u128 || widest as u128 > MAX_ELEMENTS as u128 {
            return Err(LaunchPlanError::TensorTooLarge { param: param.name.clone(), elements, limit: MAX_ELEMENTS });
        }
        for (dim, ((symbol, _), &value)) in tensor.shape.iter().zip(shape.dims).enumerate() {
            match first.iter().find(|(s, ..)| s == symbol) {
                Some((_, first_value, first_param, first_dim)) if *first_value != value => {
                    return Err(LaunchPlanError::ShapeMismatch {
                        symbol: symbol.clone(),
                        first_param: first_param.clone(),
                        first_dim: *first_dim,
                        first_value: *first_value,
                        param: param.name.clone(),
                        dim,
                        value,
                    });
                }
                Some(_) => {}
                None => first.push((symbol.clone(), value, param.name.clone(), dim)),
            }
        }
    }
    let values = kernel
        .shape_symbols()
        .into_iter()
        .filter_map(|symbol| first.iter().find(|(s, ..)| s == symbol).map(|(s, v, ..)| (s.clone(), *v as i64)))
        .collect();
    Ok(ShapeBinding { values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Access, Config, ElementType, Expr, GlobalTensor, GridBinding, Origin, Param, ParamKind, Statement};

    fn matrix_kernel() -> Kernel {
        Kernel {
            name: "k".into(),
            doc: None,
            origin: Origin::default(),
            params: vec![Param {
                name: "a".into(),
                origin: Origin::default(),
                kind: ParamKind::Global(GlobalTensor {
                    element: ElementType::F32,
                    access: Access::ReadOnly,
                    shape: vec![("M".into(), Origin::default()), ("K".into(), Origin::default())],
                }),
            }],
            config: Config::default(),
            body: vec![Statement::Grid(GridBinding {
                vars: vec!["bx".into()],
                extents: vec![Expr::name("M")],
                stream_k: false,
                grouped: None,
                zigzag: false,
                dynamic: false,
                origin: Origin::default(),
            })],
        }
    }

    #[test]
    fn a_strided_matrix_is_limited_by_the_elements_it_spans() {
        let kernel = matrix_kernel();
        let shape = |dims: &'static [usize], ld| [TensorShape { param: "a", dims, leading_dimension: ld }];
        // 46 340² < 2³¹ − 2²⁰ elements dense, but rows 46 341 apart span more
        assert!(LaunchPlan::new(&kernel, &shape(&[46_000, 46_000], None), 0).is_ok());
        assert!(LaunchPlan::new(&kernel, &shape(&[46_000, 46_000], Some(46_000)), 0).is_ok());
        match LaunchPlan::new(&kernel, &shape(&[46_000, 1], Some(50_000)), 0) {
            Err(LaunchPlanError::TensorTooLarge { param, elements, .. }) => {
                assert_eq!((param.as_str(), elements), ("a", 45_999 * 50_000 + 1));
            }
            other => panic!("expected TensorTooLarge, got {other:?}"),
        }
        // a leading dimension alone past the limit, on one row
        let wide = shape(&[1, 4], Some(MAX_ELEMENTS as usize + 1));
        assert!(matches!(LaunchPlan::new(&kernel, &wide, 0), Err(LaunchPlanError::TensorTooLarge { .. })));
    }
}

impl Kernel {
    /// Whether the kernel may be launched as a programmatic dependent of the grid before it on
    /// its stream (sm_90 on): it waits for that grid, and sees its writes, before it touches
    /// memory, and lets the next grid launch once every block of its own has started. A small
    /// later pass launched so overlaps its launch with the earlier pass's last blocks — 1.3 µs
    /// of the 31 µs GEMV Aᵀ·x of two passes at 4097 × 4095 on an H100
    /// (`benchmarks/lab/rows/gemv_t.cu`). Every kernel tessera renders does; the renderer
    /// emits the wait where this says so, and the runtime's dependent launch asks for the
    /// overlap only then.
    ///
    /// ```
    /// use tessera_dsl::*;
    /// let kernel = Kernel {
    ///     name: "k".into(), doc: None, body: vec![], origin: Origin::default(), params: vec![],
    ///     config: Config::default(),
    /// };
    /// assert!(kernel.waits_for_prior_grid());
    /// ```
    pub fn waits_for_prior_grid(&self) -> bool {
        true
    }
}
