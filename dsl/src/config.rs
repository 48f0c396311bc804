use serde::{Deserialize, Serialize};

use crate::{Expr, Origin};

/// The knobs of a kernel: what `#[tile_kernel(threads = .., vector = .., consts(..))]` sets.
///
/// The runtime may re-render a kernel with another `Config` (a narrower vector width for an
/// unaligned pointer, a candidate of the autotuner); the body stays the same.
///
/// ```
/// use tessera_dsl::{Config, Constant, ThreadBlock, VectorWidth};
/// let config = Config {
///     threads: ThreadBlock::linear(256),
///     vector: VectorWidth::W4,
///     constants: vec![Constant::new("TILE", 1024)],
///     ..Config::default()
/// };
/// assert_eq!(config.constant("TILE"), Some(1024));
/// assert_eq!(config.threads.count(), 256);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub threads: ThreadBlock,
    pub vector: VectorWidth,
    pub constants: Vec<Constant>,
    /// `min_blocks = n`: ask the compiler to keep registers low enough for n resident
    /// blocks per SM (`__launch_bounds__(THREADS, n)`).
    #[serde(default)]
    pub min_blocks: Option<u32>,
    /// `target = sm_90`: validate against that architecture's limits (its opt-in shared
    /// memory, say) instead of those every supported GPU shares; as compute capability
    /// `major * 10 + minor`. The launch re-checks what the device in hand allows.
    #[serde(default)]
    pub target: Option<u32>,
    /// `target = sm_90a`: the architecture-specific features of sm_90 (wgmma, setmaxnreg),
    /// so the kernel runs only on compute capability 9.0.
    #[serde(default)]
    pub arch_specific: bool,
    /// `cluster = 8` or `cluster = (2, 1)`: the grid's blocks run in thread-block clusters of
    /// that many blocks along x, y (and z), co-scheduled on one GPC, each able to read the
    /// others' shared memory (sm_90). `None`: no clusters.
    #[serde(default)]
    pub cluster: Option<[u32; 3]>,
    /// Where `cluster = ..` was written.
    #[serde(default)]
    pub cluster_origin: Origin,
    /// `precision = tf32`: f32 operands of a warp-tile `mma` run on tensor cores as TF32.
    #[serde(default)]
    pub precision: crate::Precision,
    /// Where `precision = ..` was written.
    #[serde(default)]
    pub precision_origin: Origin,
    /// Set by the launcher when it rendered the kernel narrower than declared, for arguments
    /// not aligned for the declared width: checks of the declared width (a tensor-core kernel
    /// declares 16-byte accesses) then accept the narrower one.
    #[serde(default)]
    pub narrowed: bool,
    /// Set by a launch whose TMA pipeline (`copies = tma`) reads a tensor whose rows TMA cannot
    /// (not 16-byte aligned): the pipeline copies with cp.async instead. A launch narrowed for
    /// another tensor (an output with odd rows) keeps TMA.
    #[serde(default)]
    pub tma_sources_unaligned: bool,
    /// Where `threads = ..` was written.
    pub threads_origin: Origin,
    /// Where `vector = ..` was written.
    pub vector_origin: Origin,
    /// Where `min_blocks = ..` was written.
    #[serde(default)]
    pub min_blocks_origin: Origin,
    /// Where `target = ..` was written.
    #[serde(default)]
    pub target_origin: Origin,
    /// `require(TR % 8 == 0, ..)`: what the body assumes of the constants, checked by
    /// validation for every configuration (the autotuner's included).
    #[serde(default)]
    pub requirements: Vec<Requirement>,
}

impl Config {
    /// The value of the named constant, if the configuration defines it.
    pub fn constant(&self, name: &str) -> Option<i64> {
        self.constants.iter().find(|c| c.name == name).map(|c| c.value)
    }

    /// The blocks of one cluster (1 without `cluster = ..`).
    ///
    /// ```
    /// use tessera_dsl::Config;
    /// assert_eq!(Config::default().cluster_blocks(), 1);
    /// assert_eq!(Config { cluster: Some([2, 4, 1]), ..Config::default() }.cluster_blocks(), 8);
    /// ```
    pub fn cluster_blocks(&self) -> u64 {
        self.cluster.map_or(1, |dims| dims.iter().map(|&d| u64::from(d)).product())
    }

    /// `cluster = ..` as written in the attribute, without the trailing 1s.
    ///
    /// ```
    /// use tessera_dsl::Config;
    /// assert_eq!(Config { cluster: Some([8, 1, 1]), ..Config::default() }.cluster_text().as_deref(), Some("8"));
    /// assert_eq!(Config { cluster: Some([2, 2, 1]), ..Config::default() }.cluster_text().as_deref(), Some("(2, 2)"));
    /// ```
    pub fn cluster_text(&self) -> Option<String> {
        self.cluster.map(|dims| match dims {
            [x, 1, 1] => format!("{x}"),
            [x, y, 1] => format!("({x}, {y})"),
            [x, y, z] => format!("({x}, {y}, {z})"),
        })
    }
}

/// A named compile-time constant (`consts(TILE = 1024)`), emitted as a `constexpr int`.
/// `fixed(D = 128)` declares one that says what the kernel computes (a head dim, a mask)
/// rather than how it is tiled: the tuner never varies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constant {
    pub name: String,
    pub value: i64,
    /// Declared in `fixed(..)`: not a tuning knob.
    #[serde(default)]
    pub fixed: bool,
    pub origin: Origin,
}

impl Constant {
    /// A tunable constant with no source position (built in Rust rather than parsed).
    ///
    /// ```
    /// let tile = tessera_dsl::Constant::new("TILE", 1024);
    /// assert!(!tile.fixed);
    /// ```
    pub fn new(name: impl Into<String>, value: i64) -> Self {
        Self { name: name.into(), value, fixed: false, origin: Origin::default() }
    }

    /// A constant the tuner leaves alone (`fixed(D = 128)`), with no source position.
    ///
    /// ```
    /// assert!(tessera_dsl::Constant::fixed("D", 128).fixed);
    /// ```
    pub fn fixed(name: impl Into<String>, value: i64) -> Self {
        Self { fixed: true, ..Self::new(name, value) }
    }
}

/// `lhs relation rhs` over constants, `THREADS` and `VECTOR`: a fact the kernel's body relies
/// on that no other check knows (an alignment, a divisibility), so that a configuration
/// breaking it is an error at the requirement, not wrong numbers at run time. One that names a
/// shape symbol (`HD <= D`: attention's head dim within the width the kernel was written for)
/// is checked at every launch instead, with the symbols' values
/// ([`LaunchPlanError::Requirement`](crate::LaunchPlanError::Requirement)).
///
/// ```
/// use tessera_dsl::{BinaryOp, Expr, Origin, Relation, Requirement, Scope};
/// let requirement = Requirement {
///     lhs: Expr::binary(BinaryOp::Rem, Expr::name("TR"), Expr::int(8)),
///     relation: Relation::Eq,
///     rhs: Expr::int(0),
///     origin: Origin::default(),
/// };
/// assert_eq!(requirement.to_string(), "TR % 8 == 0");
/// assert_eq!(requirement.holds(&Scope::default().with("TR", 64)), Ok(true));
/// assert_eq!(requirement.holds(&Scope::default().with("TR", 60)), Ok(false));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    pub lhs: Expr,
    pub relation: Relation,
    pub rhs: Expr,
    pub origin: Origin,
}

impl Requirement {
    /// The names it reads, each once, in order.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.lhs.names().into_iter().map(|(name, _)| name).collect();
        names.extend(self.rhs.names().into_iter().map(|(name, _)| name));
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|name| seen.insert(*name));
        names
    }

    /// The values `scope` gives its names, for a message: `HD = 128, D = 64`.
    pub fn values(&self, scope: &crate::Scope) -> String {
        let known: Vec<String> =
            self.names().iter().filter_map(|name| scope.get(name).map(|value| format!("{name} = {value}"))).collect();
        known.join(", ")
    }

    /// Whether it holds with the names of `scope`; `Err` names what could not be evaluated.
    pub fn holds(&self, scope: &crate::Scope) -> Result<bool, crate::EvalError> {
        let (lhs, rhs) = (self.lhs.eval(scope)?, self.rhs.eval(scope)?);
        Ok(match self.relation {
            Relation::Eq => lhs == rhs,
            Relation::Ne => lhs != rhs,
            Relation::Lt => lhs < rhs,
            Relation::Le => lhs <= rhs,
            Relation::Gt => lhs > rhs,
            Relation::Ge => lhs >= rhs,
        })
    }
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.relation.symbol(), self.rhs)
    }
}

/// The comparison of a [`Requirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Relation {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Relation {
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
        }
    }
}

/// The shape of a thread block: `threads = 256` or `threads = (32, 8)`.
///
/// ```
/// let block = tessera_dsl::ThreadBlock { x: 32, y: 8, z: 1 };
/// assert_eq!(block.count(), 256);
/// assert_eq!(block.rank(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadBlock {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl ThreadBlock {
    pub fn linear(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }

    /// Threads per block. Saturates rather than overflowing, so validation can report it.
    pub fn count(&self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }

    /// How many dimensions the block uses (1 for `threads = 256`).
    pub fn rank(&self) -> usize {
        if self.z > 1 {
            3
        } else if self.y > 1 {
            2
        } else {
            1
        }
    }
}

impl Default for ThreadBlock {
    fn default() -> Self {
        Self::linear(256)
    }
}

impl std::fmt::Display for ThreadBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.rank() {
            1 => write!(f, "{}", self.x),
            2 => write!(f, "({}, {})", self.x, self.y),
            _ => write!(f, "({}, {}, {})", self.x, self.y, self.z),
        }
    }
}

/// Elements moved per global or shared access: 1 (scalar), 2 (64-bit for f32), 4 (128-bit for
/// f32) or 8 (128-bit for f16/bf16). What counts is bytes: validation refuses a width whose
/// access is wider than 16 bytes for the kernel's element types.
///
/// ```
/// use tessera_dsl::VectorWidth;
/// assert_eq!(VectorWidth::new(4), Some(VectorWidth::W4));
/// assert_eq!(VectorWidth::new(3), None);
/// assert_eq!(VectorWidth::W4.narrower(), Some(VectorWidth::W2));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum VectorWidth {
    #[default]
    W1,
    W2,
    W4,
    W8,
}

impl VectorWidth {
    pub const ALL: [VectorWidth; 4] = [Self::W1, Self::W2, Self::W4, Self::W8];

    pub fn new(width: u32) -> Option<Self> {
        match width {
            1 => Some(Self::W1),
            2 => Some(Self::W2),
            4 => Some(Self::W4),
            8 => Some(Self::W8),
            _ => None,
        }
    }

    pub fn get(self) -> u32 {
        match self {
            Self::W1 => 1,
            Self::W2 => 2,
            Self::W4 => 4,
            Self::W8 => 8,
        }
    }

    /// The next narrower width, or `None` for scalar.
    pub fn narrower(self) -> Option<Self> {
        match self {
            Self::W8 => Some(Self::W4),
            Self::W4 => Some(Self::W2),
            Self::W2 => Some(Self::W1),
            Self::W1 => None,
        }
    }
}

impl std::fmt::Display for VectorWidth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.get(), f)
    }
}
