use serde::{Deserialize, Serialize};

use crate::{ElementType, Expr, Origin, ThreadExpr, ThreadExprKind, ThreadStatement};

/// One statement of a kernel body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Statement {
    /// `let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));`
    Grid(GridBinding),
    /// `for t in grid_stride(cdiv(N, TILE)) { .. }`
    GridStride(GridStrideLoop),
    /// `let t = shared::<f32>([T, T]).pad(1);`
    Shared(SharedBuffer),
    /// `copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));`
    Copy(TileCopy),
    /// `let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]).split([2, 2]);`
    Fragment(Fragment),
    /// `for k in pipeline(0..cdiv(K, BK), stages = 2) { .. }`
    Pipeline(PipelineLoop),
    /// `mma(&a_s.t(), &b_s, &mut acc);`
    Mma(Mma),
    /// `__syncthreads()`: written as `sync();`, or placed by [`crate::with_barriers`] where a
    /// shared buffer changes hands.
    Sync(Barrier),
    /// Per-thread code: `let mut s = 0.0f32;`, `s += x[i];`, `if`, `for j in 0..4 { .. }`,
    /// `atomic_add(&y[0], s);` (see [`ThreadStatement`]).
    Thread(ThreadStatement),
}

/// A block tile of accumulators held in registers, spread over the threads: each thread
/// owns a `thread_tile` of it. `split` cuts each thread's tile into sub-tiles spaced a
/// half (third, ...) block apart, so that neighbouring threads read neighbouring vectors.
///
/// ```
/// use tessera_dsl::{ElementType, Expr, Fragment, Origin};
/// let acc = Fragment {
///     name: "acc".into(), element: ElementType::F32,
///     shape: vec![Expr::int(128), Expr::int(128)], thread_tile: vec![Expr::int(8), Expr::int(8)],
///     split: [2, 2], warp_layout: None, warp_tile: None, warpgroup_tile: None, origin: Origin::default(),
/// };
/// assert_eq!(acc.to_string(), "fragment::<f32>([128, 128]).thread_tile([8, 8]).split([2, 2])");
/// // a tensor-core fragment: each warp holds a 64 × 32 tile in mma.sync's accumulator layout
/// let tc = Fragment { thread_tile: vec![], split: [1, 1], warp_tile: Some(vec![Expr::int(64), Expr::int(32)]), ..acc };
/// assert_eq!(tc.to_string(), "fragment::<f32>([128, 128]).warp_tile([64, 32])");
/// // a wgmma fragment: each warpgroup (4 warps) holds a 64 × 128 tile, 16 rows per warp
/// let wg = Fragment { warp_tile: None, warpgroup_tile: Some(vec![Expr::int(64), Expr::int(128)]), ..tc };
/// assert_eq!(wg.to_string(), "fragment::<f32>([128, 128]).warpgroup_tile([64, 128])");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fragment {
    pub name: String,
    pub element: ElementType,
    /// [rows, columns] of the block tile.
    pub shape: Vec<Expr>,
    /// [rows, columns] each thread holds.
    pub thread_tile: Vec<Expr>,
    /// Sub-tiles per thread along rows and columns ([1, 1]: one contiguous tile).
    pub split: [u32; 2],
    /// `.warp_layout([4, 8])`: the 32 threads of a warp hold a 4 × 8 block of thread tiles
    /// (instead of consecutive threads along the rows), so a warp's operand reads span fewer
    /// shared-memory wavefronts.
    #[serde(default)]
    pub warp_layout: Option<[u32; 2]>,
    /// `.warp_tile([WM, WN])`: a tensor-core fragment. Each warp holds a WM × WN tile of the
    /// block tile in the accumulator layout of `mma.sync` (WM / 16 × WN / 8 tiles of 16 × 8,
    /// four values per lane each); `thread_tile` is then empty.
    #[serde(default)]
    pub warp_tile: Option<Vec<Expr>>,
    /// `.warpgroup_tile([64, WN])`: a wgmma fragment (sm_90a). Each warpgroup of 4 warps holds
    /// a 64 × WN tile in `wgmma.mma_async`'s accumulator layout — warp w of the group its rows
    /// 16w .. 16w + 15, laid out as mma.sync's m16n8 tiles; `thread_tile` is then empty.
    #[serde(default)]
    pub warpgroup_tile: Option<Vec<Expr>>,
    pub origin: Origin,
}

impl std::fmt::Display for Fragment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |exprs: &[Expr]| exprs.iter().map(Expr::to_string).collect::<Vec<_>>().join(", ");
        write!(f, "fragment::<{}>([{}])", self.element, list(&self.shape))?;
        match (&self.warp_tile, &self.warpgroup_tile) {
            (Some(tile), _) => write!(f, ".warp_tile([{}])", list(tile))?,
            (None, Some(tile)) => write!(f, ".warpgroup_tile([{}])", list(tile))?,
            (None, None) => write!(f, ".thread_tile([{}])", list(&self.thread_tile))?,
        }
        if self.split != [1, 1] {
            write!(f, ".split([{}, {}])", self.split[0], self.split[1])?;
        }
        if let Some([rows, cols]) = self.warp_layout {
            write!(f, ".warp_layout([{rows}, {cols}])")?;
        }
        Ok(())
    }
}

/// A loop over `count` k-tiles. With `stages = 1` each iteration loads, waits, computes and
/// waits; with `stages = 2` the next tile is fetched into registers while the current one is
/// computed from the other half of double-buffered shared memory (one barrier per tile); with
/// `stages = n ≥ 3` (up to 8) the copies become cp.async into a ring of n shared tiles, n − 1
/// of them in flight while the oldest is computed (one barrier per tile, no staging registers).
/// With `producers = 128` (sm_90) a warpgroup of its own issues the cp.async copies, signalling
/// each filled stage on an mbarrier, while the block's threads only read shared memory and
/// compute; the two hand registers over with `setmaxnreg` (producers keep 40). With
/// `copies = tma` as well, one producer thread issues each k-tile as TMA bulk tensor copies
/// into `.panels()` buffers (see [`crate::CopyMechanism`]); with `consumers = 2` the compute
/// threads form two groups that take alternate tiles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineLoop {
    pub var: String,
    pub count: Expr,
    pub stages: u32,
    /// Threads added to the block that only copy (a warp-specialised pipeline), if any.
    #[serde(default)]
    pub producers: Option<u32>,
    /// How the producers copy: cp.async (the default) or TMA (`copies = tma`).
    #[serde(default)]
    pub copies: crate::CopyMechanism,
    /// `consumers = n` (with producers): the compute threads split into n groups, each as many
    /// as one tile's fragment needs, each multiplying and storing tiles of its own in turn —
    /// one group's epilogue runs while the next group's tile is multiplied. `None`: one group.
    #[serde(default)]
    pub consumers: Option<u32>,
    pub body: Vec<Statement>,
    pub origin: Origin,
}

impl PipelineLoop {
    /// The tile copies of the loop's body, in order (what its stages hold).
    pub fn tile_copies(&self) -> impl Iterator<Item = &TileCopy> {
        self.body.iter().filter_map(|s| match s {
            Statement::Copy(copy) => Some(copy),
            _ => None,
        })
    }
}

/// `mma(a, b, &mut acc)`: acc += a · b over the shared k extent, as FFMA outer products on
/// each thread's tile. `a` is seen as [rows of acc, k], `b` as [k, columns of acc].
/// `.double_buffer_fragments()` reads step kk + 1's values of a and b from shared memory into
/// a second set of registers while step kk's are multiplied, so the loads' latency hides
/// behind the FFMAs even with few warps per scheduler. `.unroll(8)` unrolls the k-steps 8 at
/// a time inside a loop over the k extent instead of all of them: a 32-deep tile of 16 × 8
/// outer products is 4096 FFMAs, more code than the instruction cache holds.
/// `.deferred()` (wgmma, the last statement of a pipeline with producers) leaves the product
/// to the next k-tile: there it is issued right behind the loop's first `mma` and waited for
/// just before thread code next touches its accumulator, so the thread code between — the next
/// tile's softmax in FlashAttention — runs while the tensor cores multiply (FlashAttention-3's
/// intra-warpgroup overlap). Its operands are read where it is written (A packed from
/// registers there; B from the tile's stage, which stays held until the product is done).
/// `.overwrite()` makes the product replace the accumulator's values, acc = a · b (its values
/// before are never read): on wgmma the first k-step's scale-d operand is 0, so a tile's S in
/// FlashAttention needs no zeroing each key tile; on mma.sync and FFMA the accumulator is
/// zeroed just before the product.
///
/// ```
/// use tessera_dsl::{Mma, Operand, Origin, SharedOperand};
/// let shared = |buffer: &str, transposed| Operand::Shared(SharedOperand { buffer: buffer.into(), transposed, origin: Origin::default() });
/// let mma = Mma { a: shared("a_s", true), b: shared("b_s", false), acc: "acc".into(),
///                 double_buffered_fragments: true, unroll: Some(8), unroll_origin: Origin::default(),
///                 deferred: false, overwrite: false, origin: Origin::default() };
/// assert_eq!(mma.to_string(), "mma(&a_s.t(), &b_s, &mut acc).double_buffer_fragments().unroll(8)");
/// let p_v = Mma { a: shared("p", false), b: shared("v_s", false), acc: "o_acc".into(),
///                 double_buffered_fragments: false, unroll: None, deferred: true, ..mma };
/// assert_eq!(p_v.to_string(), "mma(&p, &v_s, &mut o_acc).deferred()");
/// let s = Mma { a: shared("q_s", false), b: shared("k_s", true), acc: "s".into(), overwrite: true, ..mma };
/// assert_eq!(s.to_string(), "mma(&q_s, &k_s.t(), &mut s).double_buffer_fragments().unroll(8).overwrite()");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mma {
    pub a: Operand,
    pub b: Operand,
    pub acc: String,
    #[serde(default)]
    pub double_buffered_fragments: bool,
    /// k-steps unrolled per trip of the loop over the k extent (`None`: all of them).
    #[serde(default)]
    pub unroll: Option<u32>,
    /// Where `.unroll(n)`'s argument is, for diagnostics.
    #[serde(default)]
    pub unroll_origin: Origin,
    /// `.deferred()`: issued behind the next k-tile's first `mma`, waited for before its
    /// accumulator is next touched.
    #[serde(default)]
    pub deferred: bool,
    /// `.overwrite()`: acc = a · b, the accumulator's values before never read.
    #[serde(default)]
    pub overwrite: bool,
    pub origin: Origin,
}

impl Mma {
    /// Whether `name` is one of the product's operands (A or B).
    pub fn reads(&self, name: &str) -> bool {
        self.a.name() == name || self.b.name() == name
    }
}

impl std::fmt::Display for Mma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mma({}, {}, &mut {})", self.a, self.b, self.acc)?;
        if self.double_buffered_fragments {
            f.write_str(".double_buffer_fragments()")?;
        }
        if let Some(steps) = self.unroll {
            write!(f, ".unroll({steps})")?;
        }
        if self.deferred {
            f.write_str(".deferred()")?;
        }
        if self.overwrite {
            f.write_str(".overwrite()")?;
        }
        Ok(())
    }
}

/// A block-wide barrier, with why it is there when tessera placed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Barrier {
    /// `None` for an explicit `sync()`.
    pub reason: Option<String>,
    pub origin: Origin,
}

/// Binds one block index per grid dimension; the grid has exactly these extents.
///
/// With `.stream_k()` the extents count tiles, not blocks: as many blocks as the device keeps
/// resident share the tiles' k loops evenly (the tiles of all but the last full round one to
/// a block, the rest cut into equal runs of k-tiles), so no SM idles through a last, partial
/// round of tiles. A tile split between blocks is summed through a workspace the runtime
/// provides, by whichever of them finishes last, always in k order.
///
/// ```
/// use tessera_dsl::{Expr, GridBinding, Origin};
/// let grid = GridBinding {
///     vars: vec!["bx".into()],
///     extents: vec![Expr::ceil_div(Expr::name("N"), Expr::name("TILE"))],
///     stream_k: false, grouped: None, zigzag: false, dynamic: false,
///     origin: Origin::default(),
/// };
/// assert_eq!(grid.to_string(), "let (bx,) = grid(cdiv(N, TILE));");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridBinding {
    pub vars: Vec<String>,
    pub extents: Vec<Expr>,
    /// `.stream_k()`: persistent blocks share the tiles' k loops.
    #[serde(default)]
    pub stream_k: bool,
    /// `.grouped(n)`: blocks that take tiles by number (producers, stream-K) take them in
    /// groups of n rows of tiles, down each group's columns, so n rows of A tiles and one
    /// column of B tiles at a time are what the resident blocks read (L2 reuse); `None`: row
    /// after row.
    #[serde(default)]
    pub grouped: Option<u32>,
    /// `.zigzag()`: blocks that take tiles by number (producers) take every other round of
    /// tiles in reverse block order — block b the b-th tile of even rounds and the b-th from
    /// the end of odd ones — so in a grid ordered from the longest tiles to the shortest (a
    /// causal attention's query tiles) a block that took one of a round's longest takes one
    /// of the next round's shortest, and every block ends with about the same work.
    #[serde(default)]
    pub zigzag: bool,
    /// `.dynamic()`: blocks that take tiles by number (producers, TMA) take the next tile from a
    /// counter the launch zeroes as they finish one — tiles in the grid's order, each block as
    /// many as it gets through — so the blocks' work evens out whatever each tile costs, with
    /// neighbouring tiles (which share what they read in L2) running together.
    #[serde(default)]
    pub dynamic: bool,
    pub origin: Origin,
}

impl std::fmt::Display for GridBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let extents: Vec<String> = self.extents.iter().map(Expr::to_string).collect();
        let vars =
            if self.vars.len() == 1 { format!("({},)", self.vars[0]) } else { format!("({})", self.vars.join(", ")) };
        write!(f, "let {vars} = grid({})", extents.join(", "))?;
        if self.stream_k {
            f.write_str(".stream_k()")?;
        }
        if let Some(rows) = self.grouped {
            write!(f, ".grouped({rows})")?;
        }
        if self.zigzag {
            f.write_str(".zigzag()")?;
        }
        if self.dynamic {
            f.write_str(".dynamic()")?;
        }
        f.write_str(";")
    }
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

/// A 2-D buffer in shared memory, row-major, each row `pad` elements longer than the tile
/// and optionally XOR-swizzled, so that column accesses spread over the 32 banks.
///
/// ```
/// use tessera_dsl::{ElementType, Expr, Origin, SharedBuffer};
/// let t = SharedBuffer {
///     name: "t".into(), element: ElementType::F32,
///     shape: vec![Expr::int(32), Expr::int(32)], pad: 1, swizzle: None, swizzle_bytes: None, panels: false,
///     origin: Origin::default(),
/// };
/// assert_eq!(t.to_string(), "shared::<f32>([32, 32]).pad(1)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedBuffer {
    pub name: String,
    pub element: ElementType,
    /// [rows, columns], compile-time constants.
    pub shape: Vec<Expr>,
    /// Extra elements at the end of each row (`.pad(1)` turns a 32×32 tile into 32×33).
    pub pad: u32,
    /// `.swizzle(unit)`: groups of `unit` columns are permuted within each row by XOR with
    /// the row index (column group g of row r lives at g ^ (r mod groups)), so a column
    /// touches every bank while runs of `unit` elements stay contiguous for vector access.
    pub swizzle: Option<u32>,
    /// `.swizzle_bytes(128)` (or 64, 32): the 16-byte chunks of each row are permuted by XOR
    /// with the index of the row's 128-byte line modulo span / 16 (TMA's swizzle modes where a
    /// row fits a line; CUTLASS's `Swizzle<3, 4, 3>` for 128), so the 8 rows of 16 bytes that
    /// `ldmatrix` reads at once fall in 8 different bank groups while each chunk stays
    /// contiguous for 16-byte access. Rows must be a multiple of `span` bytes.
    #[serde(default)]
    pub swizzle_bytes: Option<u32>,
    /// `.panels()` (with `.swizzle_bytes(span)`): the columns are stored in panels one span
    /// wide, each panel's rows one after another and every panel 1024-byte aligned — the
    /// layout TMA writes and wgmma's shared-memory descriptors read (a row of a [64, 256]
    /// bf16 tile is four 128-byte rows, one in each panel).
    #[serde(default)]
    pub panels: bool,
    pub origin: Origin,
}

impl std::fmt::Display for SharedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(Expr::to_string).collect();
        write!(f, "shared::<{}>([{}])", self.element, shape.join(", "))?;
        if self.pad > 0 {
            write!(f, ".pad({})", self.pad)?;
        }
        if let Some(unit) = self.swizzle {
            write!(f, ".swizzle({unit})")?;
        }
        if let Some(span) = self.swizzle_bytes {
            write!(f, ".swizzle_bytes({span})")?;
        }
        if self.panels {
            write!(f, ".panels()")?;
        }
        Ok(())
    }
}

/// A copy of one tile from `src` to `dst`, spread over the block's threads with the
/// configured vector width along the destination's rows; tiles that run past a tensor's
/// end take a guarded path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileCopy {
    pub src: Operand,
    pub dst: Operand,
    /// Which way consecutive threads walk the destination tile.
    pub order: ItemOrder,
    /// `.axpby(alpha, beta)`: dst = alpha · src + beta · dst, with scalar parameters.
    pub axpby: Option<(String, String)>,
    /// `.map(|v, row, col| ..)`: each value of a fragment replaced by an expression of it and
    /// of its place in the destination before it is stored (and before `.axpby`).
    pub map: Option<ElementMap>,
    /// `.by_tma()` on a wgmma fragment's copy out: each warp stages its rows in shared memory
    /// and TMA stores them, asynchronously (a TMA pipeline's kernels only).
    #[serde(default)]
    pub by_tma: bool,
    pub origin: Origin,
}

/// `.map(|v, row, col| gelu(v + bias[col]))` on an epilogue copy: a thread expression of the
/// accumulator `value` (the fragment's element type) and its `row` and `col` in the
/// destination tensor (`i32`), whose result is what is stored. A fused epilogue: bias,
/// activation, residual, scaling, in the registers the GEMM left them in.
///
/// ```
/// use tessera_dsl::{ElementMap, Intrinsic, Origin, ThreadExpr, ThreadExprKind};
/// let body = ThreadExpr::new(ThreadExprKind::Call { function: Intrinsic::Gelu, args: vec![ThreadExpr::name("v")] });
/// let map = ElementMap { value: "v".into(), row: "row".into(), col: "col".into(), body, origin: Origin::default() };
/// assert_eq!(map.to_string(), ".map(|v, row, col| gelu(v))");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementMap {
    pub value: String,
    pub row: String,
    pub col: String,
    pub body: ThreadExpr,
    pub origin: Origin,
}

impl std::fmt::Display for ElementMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, ".map(|{}, {}, {}| {})", self.value, self.row, self.col, self.body)
    }
}

impl ElementMap {
    /// The tensors this map reads at each value's own place — `t[[row, col]]` with the
    /// closure's row and column as they are (a residual added) — in the order of their first
    /// read: an epilogue that stores a row's values 16 bytes a lane can load them the same way
    /// instead of reading each value on its own.
    ///
    /// ```
    /// use tessera_dsl::{ElementMap, Origin, ThreadExpr, ThreadExprKind, ThreadOp};
    /// let at = |base: &str, row: &str| ThreadExpr::new(ThreadExprKind::Index {
    ///     base: base.into(),
    ///     indices: vec![ThreadExpr::name(row), ThreadExpr::name("col")],
    /// });
    /// let sum = |lhs, rhs| ThreadExpr::new(ThreadExprKind::Binary { op: ThreadOp::Add, lhs: Box::new(lhs), rhs: Box::new(rhs) });
    /// let map = ElementMap {
    ///     value: "v".into(), row: "row".into(), col: "col".into(),
    ///     // `u[[0, col]]` is not at the value's place
    ///     body: sum(sum(ThreadExpr::name("v"), at("residual", "row")), at("u", "0")),
    ///     origin: Origin::default(),
    /// };
    /// assert_eq!(map.reads_in_place(), ["residual"]);
    /// ```
    pub fn reads_in_place(&self) -> Vec<String> {
        let mut tensors = Vec::new();
        self.body.walk(&mut |e| {
            if let Some(tensor) = self.read_in_place(e) {
                if !tensors.iter().any(|t| t == tensor) {
                    tensors.push(tensor.to_string());
                }
            }
        });
        tensors
    }

    /// The body with each read at the value's own place of a tensor in `tensors` replaced by
    /// the name `named(tensor)`: for an epilogue that loaded those values beforehand.
    pub fn body_with_reads_in_place_named(&self, tensors: &[String], named: impl Fn(&str) -> String) -> ThreadExpr {
        self.body.replaced(&|e| {
            self.read_in_place(e).filter(|t| tensors.iter().any(|x| x == t)).map(|t| ThreadExpr::name(named(t)))
        })
    }

    /// The tensor `e` reads at the value's own place, if it is such a read.
    fn read_in_place<'a>(&self, e: &'a ThreadExpr) -> Option<&'a str> {
        let is = |index: &ThreadExpr, name: &str| name != "_" && index.kind == ThreadExprKind::Name(name.to_string());
        match &e.kind {
            ThreadExprKind::Index { base, indices } if indices.len() == 2 => {
                (is(&indices[0], &self.row) && is(&indices[1], &self.col)).then_some(base.as_str())
            }
            _ => None,
        }
    }
}

/// How thread t finds its elements in the destination tile of a copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemOrder {
    /// Consecutive threads take consecutive vectors along a row (coalesced when the
    /// destination row is contiguous).
    #[default]
    RowMajor,
    /// Consecutive threads go down a column, one vector each (`.column_major()`): what the
    /// note of seeds/002 does to read shared memory without conflicts.
    ColumnMajor,
}

/// One side of a copy or an operand of `mma`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operand {
    Global(TileOperand),
    Shared(SharedOperand),
    /// `&acc`: a register fragment (the source of an epilogue copy).
    Fragment(FragmentOperand),
}

/// `&acc`: a fragment as a copy source; `&acc.t()` stores it transposed (a fragment that
/// holds Cᵀ, as a TF32 wgmma on a B stored [K, N] computes it, copied to C).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentOperand {
    pub fragment: String,
    #[serde(default)]
    pub transposed: bool,
    pub origin: Origin,
}

impl Operand {
    pub fn origin(&self) -> Origin {
        match self {
            Operand::Global(tile) => tile.origin,
            Operand::Shared(shared) => shared.origin,
            Operand::Fragment(fragment) => fragment.origin,
        }
    }

    pub fn transposed(&self) -> bool {
        match self {
            Operand::Global(tile) => tile.transposed,
            Operand::Shared(shared) => shared.transposed,
            Operand::Fragment(fragment) => fragment.transposed,
        }
    }

    /// The tensor, buffer or fragment this operand reads or writes.
    pub fn name(&self) -> &str {
        match self {
            Operand::Global(tile) => &tile.tensor,
            Operand::Shared(shared) => &shared.buffer,
            Operand::Fragment(fragment) => &fragment.fragment,
        }
    }
}

/// `x.tile([index..], [extent..])`, optionally `.t()`: the tile at tile coordinates `index`
/// (in units of `extent`) of the global tensor `tensor`. For a tensor of rank 3 or 4,
/// `x.at([b, h]).tile(..)` first selects one matrix by its leading (batch) indices; the tile
/// is then a 2-D tile of that matrix.
///
/// ```
/// use tessera_dsl::{Expr, Origin, TileOperand};
/// let tile = TileOperand {
///     tensor: "x".into(),
///     at: vec![],
///     index: vec![Expr::name("bx")],
///     extent: vec![Expr::name("TILE")],
///     transposed: false,
///     origin: Origin::default(),
/// };
/// assert_eq!(tile.to_string(), "x.tile([bx], [TILE])");
/// let batched = TileOperand {
///     tensor: "q".into(),
///     at: vec![Expr::name("b"), Expr::name("h")],
///     index: vec![Expr::name("qt"), Expr::int(0)],
///     extent: vec![Expr::name("BQ"), Expr::name("D")],
///     transposed: false,
///     origin: Origin::default(),
/// };
/// assert_eq!(batched.to_string(), "q.at([b, h]).tile([qt, 0], [BQ, D])");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileOperand {
    pub tensor: String,
    /// `.at([..])`: the indices of the leading (batch) dimensions of a tensor of rank 3 or
    /// 4, outermost first (rank − 2 of them); empty for 1-D and 2-D tensors.
    #[serde(default)]
    pub at: Vec<Expr>,
    pub index: Vec<Expr>,
    pub extent: Vec<Expr>,
    /// `.t()`: the tile seen transposed (element (i, j) of the view is (j, i) of the tile).
    pub transposed: bool,
    pub origin: Origin,
}

/// `&t` or `&t.t()`: a whole shared buffer, possibly seen transposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedOperand {
    pub buffer: String,
    pub transposed: bool,
    pub origin: Origin,
}

impl std::fmt::Display for TileOperand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |exprs: &[Expr]| exprs.iter().map(Expr::to_string).collect::<Vec<_>>().join(", ");
        f.write_str(&self.tensor)?;
        if !self.at.is_empty() {
            write!(f, ".at([{}])", list(&self.at))?;
        }
        write!(f, ".tile([{}], [{}])", list(&self.index), list(&self.extent))?;
        if self.transposed {
            f.write_str(".t()")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operand::Global(tile) => tile.fmt(f),
            Operand::Shared(shared) => write!(f, "&{}{}", shared.buffer, if shared.transposed { ".t()" } else { "" }),
            Operand::Fragment(fragment) => {
                write!(f, "&{}{}", fragment.fragment, if fragment.transposed { ".t()" } else { "" })
            }
        }
    }
}

impl std::fmt::Display for TileCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "copy({}, {})", self.src, self.dst)?;
        if self.order == ItemOrder::ColumnMajor {
            f.write_str(".column_major()")?;
        }
        if let Some(map) = &self.map {
            map.fmt(f)?;
        }
        if let Some((alpha, beta)) = &self.axpby {
            write!(f, ".axpby({alpha}, {beta})")?;
        }
        if self.by_tma {
            f.write_str(".by_tma()")?;
        }
        Ok(())
    }
}
