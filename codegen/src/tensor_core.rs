//! Tensor-core GEMM: `.warp_tile(..)` fragments, `mma` on `mma.sync` fed by `ldmatrix` (or,
//! from global tiles, by plain loads), and their epilogue. The same IR nodes as the FFMA path
//! (`Fragment`, `Mma`, the fragment copy), each rendered by a template of its own.

use askama::Template;
use tessera_dsl::{
    ElementType, EpiloguePlan, Fragment, FragmentLayout, FragmentPlan, Kernel, MmaInstruction, MmaPlan, OperandPlan,
    TileCopy,
};

use crate::c_expr;
use crate::operand::{zero, OperandText};
use crate::statement::{declared_fragment, indent, invalid, invalid_plan, template_error};
use crate::RenderError;

#[derive(Template)]
#[template(path = "warp_fragment.cu", escape = "none")]
struct WarpFragmentSource<'a> {
    dsl: String,
    /// Comment lines: which warp holds which tile.
    placement: Vec<String>,
    /// `warp_row0`, `warp_col0` (and a wgmma fragment's `warpgroup_row0`) as C expressions.
    origins: Vec<(String, String)>,
    warp_rows_name: String,
    warp_cols_name: String,
    name: &'a str,
}

#[derive(Template)]
#[template(path = "mma_sync.cu", escape = "none")]
struct MmaSyncSource {
    dsl: String,
    instruction: String,
    k_name: String,
    warp_rows: String,
    warp_cols: String,
    operands_note: String,
    a_loads: Vec<String>,
    b_loads: Vec<String>,
    b_step: i64,
    k_step: i64,
    mma_function: String,
    acc: String,
    /// `.overwrite()`: the accumulator zeroed before the first k-step.
    overwrite: bool,
}

#[derive(Template)]
#[template(path = "wgmma.cu", escape = "none")]
struct WgmmaSource {
    dsl: String,
    instruction: String,
    k_name: String,
    /// The k extent of one instruction: 16 on 16-bit inputs, 8 on TF32.
    k_step: i64,
    n: i64,
    operands_note: String,
    input: &'static str,
    acc: String,
    /// A from shared memory through a descriptor, or (`None`) from registers: `a_loads` then
    /// pack the register fragment's k-step `kk` into `a_frag[kk / 16]`.
    a: Option<Descriptor>,
    a_loads: Vec<String>,
    b: Descriptor,
    /// m64 tiles a warpgroup multiplies (its `.warpgroup_tile([64 · m, N])`): one instruction
    /// each per k-step, A's descriptor at the tile's rows (`a.start` then reads `mi`).
    m_tiles: i64,
    /// Commit groups left running: 0 waits for this one, 1 for the one before it.
    in_flight: u32,
    /// `.deferred()` at its own place: only its A registers, packed into the loop's `a_frag`.
    operands_only: bool,
    /// `.deferred()` in the next k-tile: fence, issue and commit from the loop's `a_frag`.
    issue_only: bool,
    /// A deferred product issued behind this one (after its commit) when `behind_condition`
    /// holds; this one is then waited for alone.
    behind: Option<String>,
    behind_condition: String,
    /// `.overwrite()`: the first k-step's scale-d is 0.
    overwrite: bool,
    /// A TF32 A the lanes load from shared memory into `{acc}_a_frag` (declared before the k
    /// loop, see [`stepwise_register_a_declaration`]): a commit group every `group_steps`
    /// k-steps (`.unroll(n)`, else 1), each group's registers reloaded once the previous
    /// k-tile's group of those steps is done.
    stepwise: Option<String>,
    group_steps: i64,
    /// The k extent of one group: `group_steps` k-steps.
    group_k: i64,
}

/// The name of the registers a stepwise register-A product (a TF32 A stored MN-major in shared
/// memory) loads each k-step's A into, kept from one k-tile to the next.
pub(crate) fn stepwise_register_a_name(acc: &str) -> String {
    format!("{acc}_a_frag")
}

/// The declaration before the k loop of the registers of `mma`'s A where the lanes load it
/// from shared memory (a TF32 A stored MN-major); `None` for any other product.
pub(crate) fn stepwise_register_a_declaration(kernel: &Kernel, mma: &tessera_dsl::Mma) -> Option<String> {
    let plan = MmaPlan::new(kernel, mma, &kernel.constant_scope()).ok()?;
    if !plan.lanes_load_a() {
        return None;
    }
    let k_name = crate::gemm::k_extent_name(kernel, mma, &plan);
    Some(format!(
        "// {}'s A registers, one set a k-step: wgmma reads them until its group is done, in the next k-tile\n\
         unsigned {}[{k_name} / {}][4];",
        mma.acc,
        stepwise_register_a_name(&mma.acc),
        plan.instruction.k_step()
    ))
}

/// The part of a wgmma product to render: all of it, or one of a `.deferred()` product's two
/// places (see [`tessera_dsl::DeferredMma`]).
#[derive(Clone, Debug)]
pub(crate) enum WgmmaPart {
    Whole,
    /// The whole product, then `behind` (a deferred product's issue) when `condition` holds.
    WithDeferredBehind {
        condition: String,
        behind: String,
    },
    /// A deferred product's A registers, where it is written.
    Operands,
    /// A deferred product's issue, in the next k-tile.
    Issue,
}

#[derive(Template)]
#[template(path = "warp_epilogue.cu", escape = "none")]
struct WarpEpilogueSource {
    dsl: String,
    element_map: Option<String>,
    origins: Vec<(String, String)>,
    whole_tile: String,
    /// `(rows_left, cols_left)`: the tensor's rows and columns from the lane's first value on,
    /// so the edge's guards compare constant offsets with two registers (per-element bounds
    /// held enough registers to spill V17's 128 accumulators).
    lane_bounds: Option<(String, String)>,
    warp_rows: String,
    warp_cols: String,
    /// Rows between a warp's m-tiles ([`FragmentLayout::m_tile_spacing`]).
    m_tile_rows: i64,
    acc: String,
    scale: Vec<String>,
    /// 16-byte stores of values traded between a row's lanes, where they apply.
    wide_store: Option<WideStore>,
    /// The loop nest storing pairs (and single elements on an edge), indented to its place.
    pairs: String,
}

/// The tile row of a lane's values in row slice (`mi`, `half`) of its warp's tile on the 16-byte
/// path: rows lane / 4 and lane / 4 + 8 of m-tile `mi`.
fn lane_row(layout: &FragmentLayout) -> String {
    format!("warp_row0 + mi * {} + half * 8 + lane / 4", layout.m_tile_spacing())
}

/// The first column of a lane's 16-byte store of 16-bit values in its warp's tile
/// ([`tessera_dsl::FragmentLayout::wide_store_position`]): chunk `lane % 4` of its group.
const HALF_WIDE_COLUMN: &str = "(group * 4 + lane % 4) * 8";

/// The 16-byte path of a wgmma epilogue. mma's layout gives a lane two neighbouring columns of
/// each 8-column chunk: 16-bit pairs are 4 bytes, so a row's four lanes trade the pairs of four
/// chunks and each stores one chunk's eight columns; f32 pairs are 8 bytes, so neighbouring
/// lanes trade one pair of two chunks and each stores four columns.
struct WideStore {
    why: [&'static str; 2],
    /// The VECTOR (elements of a 16-byte access) the destination's rows must allow.
    vector: u32,
    /// Chunks of 8 columns a lane's store gathers from.
    chunks: u32,
    pair_type: &'static str,
    /// Before a group's chunks: the loads of the tensors the map reads at each value's own
    /// place, 16 bytes a lane and traded back to the accumulators' places (16-bit values).
    preloads: Vec<String>,
    /// The statements that leave the lane's pair of one chunk in `out`, then its value in `pairs`.
    pair_values: Vec<String>,
    /// Before a row slice's groups: β · C's buffers ([`DestinationReads`]).
    row_loads: Vec<String>,
    pair: &'static str,
    /// The trade between lanes, and what the lane then stores where.
    exchange: &'static str,
    column: &'static str,
    store_type: &'static str,
    stored: &'static str,
    target: String,
}

impl WideStore {
    /// The path for `element` values of `layout`, if it has one: wgmma fragments only (on a
    /// mma.sync warp tile the second path spilled FlashAttention's head-dim-128 kernel, whose
    /// k loop already holds 255 registers), whose warps' columns are whole groups of chunks.
    fn of(
        layout: &FragmentLayout,
        element: ElementType,
        (preloads, pair_values): (Vec<String>, Vec<String>),
        destination: Option<DestinationReads>,
        target: String,
    ) -> Option<Self> {
        if layout.wide_store_columns(element).is_none() {
            return None;
        }
        let (row_loads, preloads) = match destination {
            Some(d) => (d.row_loads, d.group_loads.into_iter().chain(preloads).collect()),
            None => (Vec::new(), preloads),
        };
        if element.is_half() {
            return Some(WideStore {
                why: [
                    "16-bit values in rows 16-byte aligned: each row's four lanes trade their pairs of four",
                    "chunks and store eight neighbouring columns each, 16 bytes a lane",
                ],
                vector: 8,
                chunks: 4,
                pair_type: "unsigned",
                preloads,
                pair_values,
                row_loads,
                pair: "tessera_pair_bits(out)",
                exchange: "unsigned columns[4];\n                    tessera_quad_transpose(pairs, columns);",
                column: HALF_WIDE_COLUMN,
                store_type: "uint4",
                stored: "make_uint4(columns[0], columns[1], columns[2], columns[3])",
                target,
            });
        }
        Some(WideStore {
            why: [
                "f32 values in rows 16-byte aligned: neighbouring lanes trade one pair of two chunks",
                "and store four neighbouring columns each, 16 bytes a lane",
            ],
            vector: 4,
            chunks: 2,
            pair_type: "float2",
            preloads,
            pair_values,
            row_loads,
            pair: "out",
            exchange: "const float4 columns = tessera_pair_exchange(pairs);",
            column: "(group * 2 + lane % 2) * 8 + lane % 4 / 2 * 4",
            store_type: "float4",
            stored: "columns",
            target,
        })
    }
}

#[derive(Template)]
#[template(path = "warp_epilogue_pairs.cu", escape = "none")]
struct WarpEpiloguePairsSource<'a> {
    warp_rows: &'a str,
    warp_cols: &'a str,
    m_tile_rows: i64,
    acc: &'a str,
    scale: &'a [String],
    pair_store: &'a [String],
    edge_store: &'a [String],
}

#[derive(Template)]
#[template(path = "warp_epilogue_transposed.cu", escape = "none")]
struct WarpEpilogueTransposedSource {
    dsl: String,
    element_map: Option<String>,
    origins: Vec<(String, String)>,
    whole_tile: String,
    warp_rows: String,
    warp_cols: String,
    m_tile_rows: i64,
    /// The lane's value v of tile (mi, ni), through `.map(..)` where there is one.
    value: String,
    /// α's scaling, before β's blend.
    scale: Vec<String>,
    in_bounds: String,
    store: Vec<String>,
}

/// The names WM and WN are written with in the source (`consts(WM = 64)`), else their values;
/// a wgmma fragment's warps hold 16 rows of its `.warpgroup_tile([64, WN])`.
fn warp_tile_names(fragment: &Fragment, layout: &FragmentLayout) -> (String, String) {
    match (fragment.warp_tile.as_deref(), fragment.warpgroup_tile.as_deref(), layout.warp_tile) {
        (Some([rows, cols]), _, _) => (c_expr(rows), c_expr(cols)),
        // warp w holds rows 16w .. of each of the warpgroup tile's m64 tiles
        (None, Some([_, cols]), Some([rows, _])) => (rows.to_string(), c_expr(cols)),
        (_, _, Some([rows, cols])) => (rows.to_string(), cols.to_string()),
        _ => ("16".into(), "8".into()),
    }
}

/// The prefix of a fragment's warp origins: `{name}_` for a `.warp_tile(..)` or
/// `.warpgroup_tile(..)` fragment in a kernel of several (FlashAttention's S and O), whose
/// `mma`s and epilogue bind `warp_row0`, `warp_col0` (and `warpgroup_row0`) to them in a
/// block of their own; empty otherwise (a kernel's only such fragment).
fn warp_origin_prefix(kernel: &Kernel, fragment: &str) -> String {
    let is_tensor_core = |f: &Fragment| f.warp_tile.is_some() || f.warpgroup_tile.is_some();
    let tensor_core = kernel
        .statements()
        .iter()
        .filter(|s| matches!(s, tessera_dsl::Statement::Fragment(f) if is_tensor_core(f)))
        .count();
    match kernel.fragment(fragment) {
        Some(f) if is_tensor_core(f) && tensor_core > 1 => format!("{fragment}_"),
        _ => String::new(),
    }
}

/// The names a fragment's warp origins are declared with: `{name}_warp_row0` and
/// `{name}_warp_col0` in a kernel of several tensor-core fragments, `warp_row0` and
/// `warp_col0` otherwise.
pub(crate) fn warp_origin_names(kernel: &Kernel, fragment: &str) -> (String, String) {
    let prefix = warp_origin_prefix(kernel, fragment);
    (format!("{prefix}warp_row0"), format!("{prefix}warp_col0"))
}

/// `const int warp_row0 = acc_warp_row0;` (the column, and a wgmma fragment's
/// `warpgroup_row0`) for the mma or epilogue of `acc` in a kernel of several tensor-core
/// fragments; nothing otherwise.
pub(crate) fn warp_origin_bindings(kernel: &Kernel, fragment: &str) -> Vec<(String, String)> {
    let prefix = warp_origin_prefix(kernel, fragment);
    if prefix.is_empty() {
        return vec![];
    }
    let wgmma = kernel.fragment(fragment).is_some_and(|f| f.warpgroup_tile.is_some());
    let names: &[&str] =
        if wgmma { &["warpgroup_row0", "warp_row0", "warp_col0"] } else { &["warp_row0", "warp_col0"] };
    names.iter().map(|name| (name.to_string(), format!("{prefix}{name}"))).collect()
}

/// `let mut acc = fragment::<f32>([BM, BN]).warp_tile([WM, WN]);` (or `.warpgroup_tile(..)`)
pub(crate) fn fragment_source(
    kernel: &Kernel,
    fragment: &Fragment,
    layout: &FragmentLayout,
) -> Result<String, RenderError> {
    let [warp_rows, warp_cols] = layout.warp_tile.ok_or_else(|| {
        let message = format!("fragment `{}` has no warp tile: `{fragment}`", fragment.name);
        invalid(kernel, fragment.origin, &message)
    })?;
    let (warp_rows_name, warp_cols_name) = warp_tile_names(fragment, layout);
    let across = layout.warps_across();
    let (placement, origins) = match layout.warpgroup_tile {
        Some([group_rows, group_cols]) => {
            let groups_across = layout.cols / group_cols.max(1);
            (
                {
                    let mut lines = vec![format!(
                        "warpgroup g (threads 128g ..) holds the {group_rows} × {group_cols} tile at (warpgroup_row0, warp_col0) of a {} × {groups_across} grid",
                        layout.rows / group_rows.max(1)
                    )];
                    let tiles = warp_cols / 8;
                    lines.extend(match layout.warpgroup_m_tiles() {
                        1 => [
                            format!("of warpgroups, in wgmma's accumulator layout: warp w of the group its rows 16w .., as {tiles} mma.sync-shaped"),
                            "16 × 8 tiles, four values of each in every lane".to_string(),
                        ],
                        m_tiles => [
                            format!("of warpgroups as {m_tiles} m64 tiles 64 rows apart, each in wgmma's accumulator layout: warp w of the"),
                            format!("group rows 16w .. of each, as {tiles} mma.sync-shaped 16 × 8 tiles, four values of each in every lane"),
                        ],
                    });
                    lines
                },
                {
                    let prefix = warp_origin_prefix(kernel, &fragment.name);
                    vec![
                        (format!("{prefix}warpgroup_row0"), format!("tid / 128 / {groups_across} * {group_rows}")),
                        (format!("{prefix}warp_row0"), format!("{prefix}warpgroup_row0 + tid / 32 % 4 * 16")),
                        (format!("{prefix}warp_col0"), format!("tid / 128 % {groups_across} * {warp_cols_name}")),
                    ]
                },
            )
        }
        None => (
            vec![
                format!(
                    "warp w holds the {warp_rows} × {warp_cols} tile at (warp_row0, warp_col0) of a {} × {across} grid of warps: {} × {}",
                    layout.warps_down(),
                    warp_rows / 16,
                    warp_cols / 8
                ),
                "mma.sync tiles of 16 × 8, four values of each in every lane".to_string(),
            ],
            {
                let (row, col) = warp_origin_names(kernel, &fragment.name);
                vec![
                    (row, format!("tid / 32 / {across} * {warp_rows_name}")),
                    (col, format!("tid / 32 % {across} * {warp_cols_name}")),
                ]
            },
        ),
    };
    WarpFragmentSource {
        dsl: format!("let mut {} = {};", fragment.name, fragment),
        placement,
        origins,
        warp_rows_name,
        warp_cols_name,
        name: &fragment.name,
    }
    .render()
    .map_err(template_error("warp_fragment.cu"))
}

/// Whether a shared operand is stored with its logical columns contiguous (`a_s` for A as
/// [rows, k]; `b_s.t()` for B stored [n, k]).
fn columns_contiguous(operand: &OperandPlan) -> bool {
    matches!(operand, OperandPlan::Shared(s) if !s.transposed)
}

/// The loads of A's fragment for mma tile `mi` at k-step `kk`.
fn a_loads(a: &OperandText<'_>, plan: &OperandPlan, input: ElementType) -> Vec<String> {
    if input == ElementType::F32 {
        return tf32_a_loads(a, plan);
    }
    match plan {
        OperandPlan::Fragment(p) => register_a_loads(p, input, "mi", "a_frag[mi]"),
        OperandPlan::Shared(_) if columns_contiguous(plan) => {
            // lane l: row l % 16 of the 16 × 16 tile, columns (l / 16) · 8 ..: the four 8 × 8 tiles
            // (rows 0-7 | 8-15) × (k 0-7 | 8-15) in a[0..4)
            let row = a.element_at("warp_row0 + mi * 16 + lane % 16", "kk + lane / 16 * 8");
            vec![format!("tessera_ldmatrix_x4<false>(a_frag[mi], &{row});")]
        }
        OperandPlan::Shared(_) => {
            // stored k-major: lane l gives the row of k = l % 8 (+ 8 for lanes 16..) of the tile
            // of rows (l / 8 % 2) · 8 .., and .trans hands each lane its A values
            let row = a.element_at("warp_row0 + mi * 16 + lane / 8 % 2 * 8", "kk + lane / 16 * 8 + lane % 8");
            vec![format!("tessera_ldmatrix_x4<true>(a_frag[mi], &{row});")]
        }
        OperandPlan::Global(_) => {
            // straight from global memory: each lane loads its own eight values
            let value = |row: &str, col: &str| guarded(a, row, col, input);
            (0..4)
                .map(|register| {
                    let row = if register % 2 == 1 {
                        "warp_row0 + mi * 16 + 8 + lane / 4"
                    } else {
                        "warp_row0 + mi * 16 + lane / 4"
                    };
                    let col = if register >= 2 { "kk + 8 + lane % 4 * 2" } else { "kk + lane % 4 * 2" };
                    format!(
                        "a_frag[mi][{register}] = tessera_pack({}, {});",
                        value(row, col),
                        value(row, &format!("{col} + 1"))
                    )
                })
                .collect()
        }
    }
}

/// A from the registers of the f32 fragment `p` (FlashAttention's P of P·V), rounded to the
/// 16-bit `input` (to nearest even). Lane l's accumulators of `p`'s m16n8 tile (mi, ni) are
/// (row g, cols 2q, 2q + 1) in [0], [1] and row g + 8 in [2], [3] (g = l / 4, q = l % 4);
/// m16n8k16's A registers of the k-step of p's columns kk .. kk + 15 are a0 = (g, 2q | 2q + 1),
/// a1 = (g + 8, same), a2 = (g, 2q + 8 | 2q + 9), a3 = (g + 8, same): n-tile kk / 8's values
/// in a0 and a1, n-tile kk / 8 + 1's in a2 and a3, the lower column in each low half.
fn register_a_loads(p: &FragmentPlan, input: ElementType, m_tile: &str, target: &str) -> Vec<String> {
    let round = crate::operand::round_to_half(input);
    let value = |tile: &str, v: usize| format!("{round}({}[{m_tile}][{tile}][{v}])", p.fragment);
    [("kk / 8", 0), ("kk / 8", 2), ("kk / 8 + 1", 0), ("kk / 8 + 1", 2)]
        .iter()
        .enumerate()
        .map(|(register, (tile, v))| {
            format!("{target}[{register}] = tessera_pack({}, {});", value(tile, *v), value(tile, v + 1))
        })
        .collect()
}

/// TF32 (m16n8k8): lane l holds A(l / 4 (+ 8), kk + l % 4 (+ 4)) in a[0..4), rounded with
/// cvt.rna. Stored [rows, k], ldmatrix's four 8 × 4 tiles of 32-bit values are exactly that;
/// stored k-major, each lane reads its four values.
fn tf32_a_loads(a: &OperandText<'_>, plan: &OperandPlan) -> Vec<String> {
    if columns_contiguous(plan) {
        let row = a.element_at("warp_row0 + mi * 16 + lane % 16", "kk + lane / 16 * 4");
        return vec![
            format!("tessera_ldmatrix_x4<false>(a_frag[mi], &{row});"),
            "tessera_round_to_tf32(a_frag[mi]);".into(),
        ];
    }
    (0..4)
        .map(|register| {
            let (row, col) = tf32_a_place(register, "warp_row0 + mi * 16", "lane");
            format!("a_frag[mi][{register}] = tessera_tf32({});", value_of(a, plan, &row, &col))
        })
        .collect()
}

/// The element of A that lane `lane` holds in TF32 A register `register` (m16n8k8's layout:
/// g = lane / 4, t = lane % 4 hold A(g, t), A(g + 8, t), A(g, t + 4), A(g + 8, t + 4)) of the 16
/// rows from `rows_from`, at k-step `kk`: (row, col) in C.
fn tf32_a_place(register: usize, rows_from: &str, lane: &str) -> (String, String) {
    let row = format!("{rows_from}{} + {lane} / 4", if register % 2 == 1 { " + 8" } else { "" });
    let col = format!("kk{} + {lane} % 4", if register >= 2 { " + 4" } else { "" });
    (row, col)
}

/// TF32: lane l holds B(kk + l % 4 (+ 4), l / 4) of n-tile `ni` in b[0..2). Stored [n, k]
/// (`b_s.t()`), ldmatrix reads it (x4: two n-tiles); stored [k, n], each lane its two values.
fn tf32_b_loads(b: &OperandText<'_>, plan: &OperandPlan, step: i64) -> Vec<String> {
    if matches!(plan, OperandPlan::Shared(_)) && !columns_contiguous(plan) {
        let row = b.element_at("kk + lane / 8 % 2 * 4", "warp_col0 + ni * 8 + lane / 16 * 8 + lane % 8");
        return if step == 2 {
            vec![
                "unsigned b_pair[4];".into(),
                format!("tessera_ldmatrix_x4<false>(b_pair, &{row});"),
                "tessera_round_to_tf32(b_pair);".into(),
                "b_frag[ni][0] = b_pair[0];".into(),
                "b_frag[ni][1] = b_pair[1];".into(),
                "b_frag[ni + 1][0] = b_pair[2];".into(),
                "b_frag[ni + 1][1] = b_pair[3];".into(),
            ]
        } else {
            vec![
                format!("tessera_ldmatrix_x2<false>(b_frag[ni], &{row});"),
                "tessera_round_to_tf32(b_frag[ni]);".into(),
            ]
        };
    }
    (0..2)
        .map(|register| {
            let k = if register == 1 { "kk + 4 + lane % 4" } else { "kk + lane % 4" };
            format!("b_frag[ni][{register}] = tessera_tf32({});", value_of(b, plan, k, "warp_col0 + ni * 8 + lane / 4"))
        })
        .collect()
}

/// wgmma's TF32 A registers of k-step `kk` from a shared operand: warp w of the warpgroup holds
/// rows 16w .. 16w + 15 in mma.sync's m16n8k8 layout — lane l (g = l / 4, t = l % 4) A(g, t),
/// A(g + 8, t), A(g, t + 4), A(g + 8, t + 4) — as f32 bits, whose low 13 the tensor cores ignore
/// as they do reading shared memory.
fn tf32_register_a_loads(a: &OperandText<'_>, registers: &str) -> Vec<String> {
    (0..4)
        .map(|register| {
            let (row, col) = tf32_a_place(register, "warp_row0", "lane");
            format!("{registers}[kk / 8][{register}] = __float_as_uint({});", a.element_at(&row, &col))
        })
        .collect()
}

/// Logical element (row, col) of an operand: guarded (zero outside the tensor) when global.
fn value_of(operand: &OperandText<'_>, plan: &OperandPlan, row: &str, col: &str) -> String {
    match plan {
        OperandPlan::Global(_) => guarded(operand, row, col, ElementType::F32),
        OperandPlan::Shared(_) | OperandPlan::Fragment(_) => operand.element_at(row, col),
    }
}

/// The loads of B's fragments for mma tiles `ni` (and `ni + 1` where `step` is 2) at `kk`.
fn b_loads(b: &OperandText<'_>, plan: &OperandPlan, input: ElementType, step: i64) -> Vec<String> {
    if input == ElementType::F32 {
        return tf32_b_loads(b, plan, step);
    }
    let count = if step == 2 { "x4" } else { "x2" };
    let spread = |registers: &str| {
        if step == 2 {
            vec![
                format!("unsigned {registers}[4];"),
                String::new(),
                format!("b_frag[ni][0] = {registers}[0];"),
                format!("b_frag[ni][1] = {registers}[1];"),
                format!("b_frag[ni + 1][0] = {registers}[2];"),
                format!("b_frag[ni + 1][1] = {registers}[3];"),
            ]
        } else {
            vec![String::new()]
        }
    };
    match plan {
        OperandPlan::Shared(_) => {
            let (trans, row) = if columns_contiguous(plan) {
                // stored k rows × n columns: lane l gives row k = l % 16 of the n block (l / 16) · 8 ..,
                // and .trans hands each lane two k-neighbours of one column
                (true, b.element_at("kk + lane % 16", "warp_col0 + ni * 8 + lane / 16 * 8"))
            } else {
                // stored n-major (`b_s.t()`): lane l gives the row of n = l % 8 of the n block (l / 16) · 8
                (false, b.element_at("kk + lane / 8 % 2 * 8", "warp_col0 + ni * 8 + lane / 16 * 8 + lane % 8"))
            };
            let mut lines = spread("b_pair");
            let target = if step == 2 { "b_pair" } else { "b_frag[ni]" };
            let fill = if step == 2 { 1 } else { 0 };
            lines[fill] = format!("tessera_ldmatrix_{count}<{trans}>({target}, &{row});");
            lines
        }
        // (MmaPlan takes a register operand as A only)
        OperandPlan::Fragment(_) => vec![],
        OperandPlan::Global(_) => {
            let value = |row: &str, col: &str| guarded(b, row, col, input);
            (0..2)
                .map(|register| {
                    let k = if register == 1 { "kk + 8 + lane % 4 * 2" } else { "kk + lane % 4 * 2" };
                    let col = "warp_col0 + ni * 8 + lane / 4";
                    format!(
                        "b_frag[ni][{register}] = tessera_pack({}, {});",
                        value(k, col),
                        value(&format!("{k} + 1"), col)
                    )
                })
                .collect()
        }
    }
}

/// Logical element (row, col) of a global operand, zero outside the tensor.
fn guarded(operand: &OperandText<'_>, row: &str, col: &str, element: ElementType) -> String {
    let value = operand.element_at(row, col);
    match operand.in_bounds_at(row, col) {
        Some(guard) => format!("({guard} ? {value} : {})", zero(element)),
        None => value,
    }
}

/// How a descriptor addresses one wgmma operand in its `.panels()` buffer — the PTX ISA's
/// matrix descriptor. K-major (k along the panel rows): 8-row atoms `8 · span` bytes apart, the
/// leading offset unused within a span. MN-major (`.trans`): panels `rows · span` bytes apart
/// along M or N, 8-k-row atoms `8 · span` apart.
struct Descriptor {
    /// The operand's first element (C, an lvalue) at k-step `kk`.
    start: String,
    leading: i64,
    stride: i64,
    /// 1: 128-byte swizzle, 2: 64, 3: 32.
    mode: i64,
    span: i64,
    /// MN-major: the instruction's `.trans` bit.
    transposed: i64,
}

impl Descriptor {
    /// Operand A (`is_a`, its rows from `warpgroup_row0`, m64 tile `mi`'s 64 · mi further
    /// where the warpgroup holds several) or B (its columns from `warp_col0`).
    fn of(operand: &OperandText<'_>, plan: &OperandPlan, is_a: bool, m_tiles: i64) -> Option<Self> {
        let OperandPlan::Shared(shared) = plan else { return None };
        let span = shared.layout.swizzle_bytes?;
        let mode = match span {
            128 => 1,
            64 => 2,
            32 => 3,
            _ => return None,
        };
        let k_major = shared.transposed != is_a;
        Some(Self {
            start: if is_a && m_tiles > 1 {
                operand.element_at("warpgroup_row0 + mi * 64", "kk")
            } else if is_a {
                operand.element_at("warpgroup_row0", "kk")
            } else {
                operand.element_at("kk", "warp_col0")
            },
            leading: if k_major { 16 } else { shared.layout.panel_bytes()? },
            stride: 8 * span,
            mode,
            span,
            transposed: i64::from(!k_major),
        })
    }

    fn major(&self) -> &'static str {
        if self.transposed == 1 {
            "MN-major"
        } else {
            "K-major"
        }
    }
}

/// `mma(a, b, &mut acc)` on a `.warpgroup_tile(..)` fragment: wgmma from shared memory.
fn wgmma_source(
    kernel: &Kernel,
    mma: &tessera_dsl::Mma,
    plan: &MmaPlan,
    stage: Option<&str>,
    input: ElementType,
    n: i64,
    in_flight: u32,
    part: WgmmaPart,
) -> Result<String, RenderError> {
    let a = OperandText::new(&plan.a).in_stage(kernel, stage);
    let b = OperandText::new(&plan.b).in_stage(kernel, stage);
    let not_addressable = |operand: &tessera_dsl::Operand, plan: &OperandPlan| {
        let found = match plan {
            OperandPlan::Shared(shared) => match shared.layout.swizzle_bytes {
                Some(32 | 64 | 128) => "MN-major without `.panels()`, whose panels a descriptor steps over".to_string(),
                Some(span) => format!("swizzled in {span}-byte spans"),
                None => "not swizzled by `.swizzle_bytes(..)`".to_string(),
            },
            OperandPlan::Global(_) => "a global tile".to_string(),
            OperandPlan::Fragment(_) => "a fragment".to_string(),
        };
        let wanted = "a shared buffer swizzled in 32-, 64- or 128-byte spans (`.panels()` where it is MN-major)";
        let message = format!("a wgmma descriptor addresses {wanted}; operand `{operand}` of `{mma}` is {found}");
        invalid(kernel, mma.origin, &message)
    };
    let m_tiles = plan.layout.warpgroup_m_tiles();
    // A in registers (FlashAttention's P): wgmma's register-A fragment of a warp is
    // mma.sync's m16n8k16 A fragment of its 16 rows, so the packing is the same
    let (a_descriptor, a_loads, a_note) = match &plan.a {
        OperandPlan::Fragment(p) => (
            None,
            register_a_loads(p, input, "0", "a_frag[kk / 16]"),
            format!("A = `{}` rounded to {input}", p.fragment),
        ),
        // TF32 A stored MN-major: no descriptor reads it, so each lane loads its four values
        OperandPlan::Shared(_) if plan.lanes_load_a() => (
            None,
            tf32_register_a_loads(&a, &stepwise_register_a_name(&mma.acc)),
            "A MN-major in shared memory, each lane loading its four values of every k-step".to_string(),
        ),
        _ => {
            let descriptor =
                Descriptor::of(&a, &plan.a, true, m_tiles).ok_or_else(|| not_addressable(&mma.a, &plan.a))?;
            let note = format!("A {} in {}-byte swizzled panels", descriptor.major(), descriptor.span);
            (Some(descriptor), Vec::new(), note)
        }
    };
    let b_descriptor = Descriptor::of(&b, &plan.b, false, 1).ok_or_else(|| not_addressable(&mma.b, &plan.b))?;
    let source = WgmmaSource {
        dsl: mma.to_string(),
        instruction: plan.instruction.ptx().unwrap_or_default(),
        k_name: crate::gemm::k_extent_name(kernel, mma, plan),
        k_step: plan.instruction.k_step(),
        n,
        operands_note: format!("{a_note}, B {} in {}-byte ones", b_descriptor.major(), b_descriptor.span),
        input: input.cuda_name(),
        acc: mma.acc.clone(),
        a: a_descriptor,
        a_loads,
        b: b_descriptor,
        m_tiles,
        in_flight,
        operands_only: matches!(part, WgmmaPart::Operands),
        issue_only: matches!(part, WgmmaPart::Issue),
        behind_condition: match &part {
            WgmmaPart::WithDeferredBehind { condition, .. } => condition.clone(),
            _ => String::new(),
        },
        behind: match part {
            WgmmaPart::WithDeferredBehind { behind, .. } => Some(indent(&behind, 2)),
            _ => None,
        },
        overwrite: mma.overwrite,
        stepwise: plan.lanes_load_a().then(|| stepwise_register_a_name(&mma.acc)),
        group_steps: mma.unroll.map_or(1, i64::from),
        group_k: mma.unroll.map_or(1, i64::from) * plan.instruction.k_step(),
    }
    .render()
    .map_err(template_error("wgmma.cu"))?;
    let mut origins = warp_origin_bindings(kernel, &mma.acc);
    origins.extend(a.origin_declarations());
    origins.extend(b.origin_declarations());
    Ok(crate::gemm::with_tile_origins(source, &origins))
}

/// `mma(a, b, &mut acc)` on a `.warp_tile(..)` fragment; `stage` picks a pipeline's stage.
pub(crate) fn mma_source(
    kernel: &Kernel,
    mma: &tessera_dsl::Mma,
    plan: &MmaPlan,
    stage: Option<&str>,
    in_flight: u32,
) -> Result<String, RenderError> {
    if let MmaInstruction::Wgmma { input, n } = plan.instruction {
        return wgmma_source(kernel, mma, plan, stage, input, n, in_flight, WgmmaPart::Whole);
    }
    let MmaInstruction::MmaSync { input, k: k_step } = plan.instruction else {
        let message = format!("`{mma}` runs as {}, not on the tensor cores", plan.instruction);
        return Err(invalid(kernel, mma.origin, &message));
    };
    let fragment = declared_fragment(kernel, &mma.acc, mma.origin)?;
    let (warp_rows, warp_cols) = warp_tile_names(fragment, &plan.layout);
    let [_, warp_cols_value] = plan.layout.warp_tile.unwrap_or([16, 8]);
    // ldmatrix.x4 loads two n-tiles of B at once where the warp tile has an even number
    let b_by_ldmatrix = matches!(&plan.b, OperandPlan::Shared(_))
        && plan.instruction.ldmatrix_loads(false, columns_contiguous(&plan.b));
    let b_step = if (warp_cols_value / 8) % 2 == 0 && b_by_ldmatrix { 2 } else { 1 };
    let a = OperandText::new(&plan.a).in_stage(kernel, stage);
    let b = OperandText::new(&plan.b).in_stage(kernel, stage);
    let k_name = crate::gemm::k_extent_name(kernel, mma, plan);
    let instruction = plan.instruction;
    let describe = |operand: &OperandPlan, name: &str, is_a: bool| match operand {
        OperandPlan::Fragment(p) => format!(
            "{name} from the registers of `{}`, each lane its own values rounded to {input} ({})",
            p.fragment,
            crate::operand::round_to_half(input)
        ),
        OperandPlan::Global(_) => format!("{name} straight from global memory, each lane its own values"),
        OperandPlan::Shared(_) if !instruction.ldmatrix_loads(is_a, columns_contiguous(operand)) => {
            format!("{name} from shared memory, each lane its own values")
        }
        OperandPlan::Shared(_) if columns_contiguous(operand) == is_a => format!("{name} by ldmatrix"),
        OperandPlan::Shared(_) => format!("{name} by ldmatrix.trans"),
    };
    let mma_function = if input == ElementType::F32 {
        "tessera_mma_m16n8k8_tf32".to_string()
    } else {
        format!("tessera_mma_m16n8k16<{}>", input.cuda_name())
    };
    let rounding = if input == ElementType::F32 { " (rounded to tf32 with cvt.rna)" } else { "" };
    let source = MmaSyncSource {
        dsl: mma.to_string(),
        instruction: plan.instruction.ptx().unwrap_or_default(),
        k_name,
        warp_rows,
        warp_cols,
        operands_note: format!("{}, {}{rounding}", describe(&plan.a, "A", true), describe(&plan.b, "B", false)),
        a_loads: a_loads(&a, &plan.a, input),
        b_loads: b_loads(&b, &plan.b, input, b_step),
        b_step,
        k_step,
        mma_function,
        acc: mma.acc.clone(),
        overwrite: mma.overwrite,
    }
    .render()
    .map_err(template_error("mma_sync.cu"))?;
    // (a register operand's rows are its own: only B's loads name the warp's columns)
    let registers = matches!(plan.a, OperandPlan::Fragment(_));
    let mut origins: Vec<_> = warp_origin_bindings(kernel, &mma.acc)
        .into_iter()
        .filter(|(name, _)| !registers || name != "warp_row0")
        .collect();
    origins.extend(a.origin_declarations());
    origins.extend(b.origin_declarations());
    Ok(crate::gemm::with_tile_origins(source, &origins))
}

/// `copy(&acc, c.tile(..))` of a `.warp_tile(..)` fragment, optionally `.axpby(alpha, beta)`:
/// f32 accumulators stored as f32, or rounded to the destination's 16-bit type.
pub(crate) fn epilogue_source(kernel: &Kernel, copy: &TileCopy, plan: &EpiloguePlan) -> Result<String, RenderError> {
    if copy.by_tma && kernel.tma_store_copy().is_some() {
        return crate::tma_store::epilogue_source(kernel, copy, plan);
    }
    if plan.transposed {
        return transposed_epilogue_source(kernel, copy, plan);
    }
    let fragment = declared_fragment(kernel, &plan.fragment, copy.origin)?;
    let (warp_rows, warp_cols) = warp_tile_names(fragment, &plan.layout);
    let dst_plan = OperandPlan::Global(plan.dst.clone());
    let dst = OperandText::new(&dst_plan);
    let element = plan.stored;
    let to_float = |value: &str| crate::operand::widened(element, value);
    let from_float = |value: &str| crate::operand::narrowed(element, value);
    let first = dst.element(0);
    let mut scale = Vec::new();
    let mut pair_store = Vec::new();
    let mut edge_store = Vec::new();
    let pair_type = crate::operand::pair_type(element);
    let component = |i: u32| element.vector_component(tessera_dsl::VectorWidth::W2, i);
    let element_map = crate::gemm::element_map_source(kernel, plan)?;
    let beta = plan.axpby.as_ref().map(|(_, beta)| beta);
    // The map reads other tensors at (row, col): on an edge tile only inside the bounds check,
    // and before α and β. Without a map, α scales the pair before it is stored.
    let mapped = |v: u32| {
        let value = crate::gemm::element_map_call(plan, &format!("value{v}"), i64::from(v));
        match &plan.axpby {
            Some((alpha, _)) => format!("{alpha} * {value}"),
            None => value,
        }
    };
    match (&element_map, &plan.axpby) {
        (Some(_), _) => {
            pair_store.push(format!("value0 = {};", mapped(0)));
            pair_store.push(format!("value1 = {};", mapped(1)));
        }
        (None, Some((alpha, _))) => {
            scale.push(format!("value0 = {alpha} * value0;"));
            scale.push(format!("value1 = {alpha} * value1;"));
        }
        (None, None) => {}
    }
    pair_store.push(format!("{pair_type} out;"));
    // the 16-byte path's statements differ only in where β · C comes from
    let mut wide_pair_store = pair_store.clone();
    let destination = DestinationReads::of(plan, &dst, &warp_cols);
    if let Some(beta) = beta {
        let blend = |old: String| {
            [
                format!("if ({beta} != 0.0f) {{"),
                format!("    const {pair_type} old = {old};"),
                format!("    value0 += {beta} * {};", to_float(&format!("old{}", component(0)))),
                format!("    value1 += {beta} * {};", to_float(&format!("old{}", component(1)))),
                "}".into(),
            ]
        };
        let loaded = format!("*reinterpret_cast<const {pair_type}*>(&{first})");
        wide_pair_store.extend(blend(destination.as_ref().map_or_else(|| loaded.clone(), |d| d.old_pair.clone())));
        pair_store.extend(blend(loaded));
    }
    let lane_bounds = dst.rows_and_columns_left().map(|(rows, cols)| {
        (format!("{rows} - (warp_row0 + lane / 4)"), format!("{cols} - (warp_col0 + lane % 4 * 2)"))
    });
    for v in 0..2u32 {
        let target = dst.element(i64::from(v));
        let guard = match &lane_bounds {
            Some(_) => {
                format!(
                    "mi * {} + half * 8 < rows_left && ni * 8{} < cols_left",
                    plan.layout.m_tile_spacing(),
                    if v == 0 { "" } else { " + 1" }
                )
            }
            None => dst.in_bounds(i64::from(v)).unwrap_or_else(|| "true".into()),
        };
        let value = if element_map.is_some() { "mapped".to_string() } else { format!("value{v}") };
        let blended = match beta {
            Some(beta) => format!("{beta} == 0.0f ? {value} : {value} + {beta} * {}", to_float(&target)),
            None => value,
        };
        edge_store.push(if element_map.is_some() {
            format!("if ({guard}) {{ const float mapped = {}; {target} = {}; }}", mapped(v), from_float(&blended))
        } else {
            format!("if ({guard}) {target} = {};", from_float(&blended))
        });
    }
    for statements in [&mut pair_store, &mut wide_pair_store] {
        statements.push(format!("out{} = {};", component(0), from_float("value0")));
        statements.push(format!("out{} = {};", component(1), from_float("value1")));
    }
    let wide = WidePairValues::of(kernel, plan, element, &wide_pair_store)?;
    let element_map = match (&element_map, crate::gemm::element_map_in_place_source(kernel, plan, &wide.in_place)?) {
        (Some(map), Some(in_place)) if !wide.in_place.is_empty() => Some(format!("{map}\n{in_place}")),
        _ => element_map,
    };
    let wide_store = WideStore::of(
        &plan.layout,
        element,
        (wide.preloads, wide.pair_values),
        destination,
        dst.element_at("row", "col"),
    );
    pair_store.push(format!("*reinterpret_cast<{pair_type}*>(&{first}) = out;"));
    let acc = plan.fragment.clone();
    let pairs = WarpEpiloguePairsSource {
        warp_rows: &warp_rows,
        warp_cols: &warp_cols,
        m_tile_rows: plan.layout.m_tile_spacing(),
        acc: &acc,
        scale: &scale,
        pair_store: &pair_store,
        edge_store: &edge_store,
    }
    .render()
    .map_err(template_error("warp_epilogue_pairs.cu"))?;
    WarpEpilogueSource {
        dsl: copy.to_string(),
        element_map,
        origins: warp_origin_bindings(kernel, &plan.fragment).into_iter().chain(dst.origin_declarations()).collect(),
        whole_tile: dst.whole_tile().unwrap_or_else(|| "true".into()),
        lane_bounds,
        pairs: indent(&pairs, if wide_store.is_some() { 2 } else { 1 }),
        wide_store,
        warp_rows,
        warp_cols,
        m_tile_rows: plan.layout.m_tile_spacing(),
        acc,
        scale,
    }
    .render()
    .map_err(template_error("warp_epilogue.cu"))
}

/// The 16-byte path's loads and pair statements: `pair_store` as the pair path has them, unless
/// the map reads 2-D tensors of the destination's 16-bit type at each value's own place (a
/// residual added) — then each group of chunks first loads those 16 bytes a lane where the lane
/// will store, trades them back to the accumulators' places across the row's four lanes
/// (`tessera_quad_transpose` is its own inverse), and the map takes them as values
/// (`element_map_here`), where reading each value on its own would read 2 bytes a lane.
struct WidePairValues {
    preloads: Vec<String>,
    pair_values: Vec<String>,
    /// The tensors so loaded.
    in_place: Vec<String>,
}

impl WidePairValues {
    fn of(
        kernel: &Kernel,
        plan: &EpiloguePlan,
        element: ElementType,
        pair_store: &[String],
    ) -> Result<Self, RenderError> {
        let tensors = plan.vector_reads_in_place(kernel);
        if tensors.is_empty() {
            return Ok(Self { preloads: Vec::new(), pair_values: pair_store.to_vec(), in_place: tensors });
        }
        let mut env = tessera_dsl::TypeEnv::of_kernel(kernel);
        env.bind_value("here_row", tessera_dsl::ThreadType::I32, false);
        env.bind_value("here_col", tessera_dsl::ThreadType::I32, false);
        let dst = &plan.dst.tensor;
        let pair_type = crate::operand::pair_type(element);
        let component = |i: u32| element.vector_component(tessera_dsl::VectorWidth::W2, i);
        let mut preloads = vec![
            format!(
                "// {}'s values at this lane's places: 16 bytes a lane where it stores, traded back",
                tensors.join(", ")
            ),
            format!("const int here_row = {dst}_row0 + {};", lane_row(&plan.layout)),
            format!("const int here_col = {dst}_col0 + warp_col0 + {HALF_WIDE_COLUMN};"),
        ];
        let mut unpacked = Vec::new();
        let mut arguments = [String::new(), String::new()];
        for tensor in &tensors {
            let read = tessera_dsl::ThreadExpr::new(tessera_dsl::ThreadExprKind::Index {
                base: tensor.clone(),
                indices: vec![tessera_dsl::ThreadExpr::name("here_row"), tessera_dsl::ThreadExpr::name("here_col")],
            });
            let element_text = crate::thread_code::expression_source(kernel, &read, &env, None)?;
            preloads.push(format!("unsigned {tensor}_pairs[4];"));
            preloads.push("{".into());
            preloads.push(format!("    const uint4 words = *reinterpret_cast<const uint4*>(&{element_text});"));
            preloads.push("    const unsigned loaded[4] = {words.x, words.y, words.z, words.w};".into());
            preloads.push(format!("    tessera_quad_transpose(loaded, {tensor}_pairs);"));
            preloads.push("}".into());
            unpacked.push(format!(
                "const {pair_type} {tensor}_pair = tessera_pair_of_bits<{pair_type}>({tensor}_pairs[chunk]);"
            ));
            for (v, argument) in arguments.iter_mut().enumerate() {
                argument.push_str(&format!(", {tensor}_pair{}", component(v as u32)));
            }
        }
        // the pair path's first two statements are the map's calls (then α, β and the rounding)
        let call = |v: usize| {
            let value = format!(
                "element_map_here(value{v}, {dst}_row0 + row, {}{})",
                crate::operand::plus(&format!("{dst}_col0 + col"), v as i64),
                arguments[v]
            );
            match &plan.axpby {
                Some((alpha, _)) => format!("value{v} = {alpha} * {value};"),
                None => format!("value{v} = {value};"),
            }
        };
        let pair_values =
            unpacked.into_iter().chain([call(0), call(1)]).chain(pair_store[2..].iter().cloned()).collect();
        Ok(Self { preloads, pair_values, in_place: tensors })
    }
}

/// β · C on the 16-byte path ([`EpiloguePlan::reads_destination_in_place`]): a batch of up to
/// [`DESTINATION_BATCH`] groups of a row slice at a time, every load of a batch issued before
/// its first store — a load of C after a store to C waits for that store, so read pair by pair
/// between stores, each waited for the memory's latency alone — and only when β ≠ 0, so that
/// β = 0 never reads C. A 16-bit C is loaded 16 bytes a lane where the lanes will store and
/// traded back to the accumulators' places (β · C is added before the rounding); an f32 C as
/// the lanes' own pairs (16 bytes a lane spilled V10's epilogue).
struct DestinationReads {
    /// Declared in each row slice (mi, half), before its groups.
    row_loads: Vec<String>,
    /// At the start of each group: the loads of the batch it begins.
    group_loads: Vec<String>,
    /// The group's pair of C at the accumulators' place, for the pair statements' β.
    old_pair: String,
}

/// The groups of a row slice whose loads of a 16-bit β · C are in flight at once (32
/// registers); an f32 C's take half as many groups (16 registers).
const DESTINATION_BATCH: i64 = 8;

impl DestinationReads {
    fn of(plan: &EpiloguePlan, dst: &OperandText<'_>, warp_cols: &str) -> Option<Self> {
        let (_, beta) = plan.axpby.as_ref().filter(|_| plan.reads_destination_in_place())?;
        let tensor = &plan.dst.tensor;
        if !plan.stored.is_half() {
            return Some(Self::f32_pairs(plan, dst, warp_cols, beta));
        }
        let groups = plan.layout.warp_tile.map_or(1, |[_, cols]| cols / 32);
        let batch = groups.min(DESTINATION_BATCH);
        let row = lane_row(&plan.layout);
        let at = dst.element_at(&row, &format!("warp_col0 + {}", HALF_WIDE_COLUMN.replace("group", "(group + next)")));
        let each_of_the_batch =
            format!("    for (int next = 0; next < {batch} && group + next < {warp_cols} / 32; ++next) {{");
        Some(Self {
            row_loads: vec![
                format!("// β · {tensor}: its values where the lanes store, 16 bytes a lane, every load of a batch of {batch}"),
                format!("// groups in flight before the batch's first store (a load of {tensor} waits for earlier stores)"),
                format!("uint4 {tensor}_words[{batch}];"),
                format!("unsigned {tensor}_pairs[{batch}][4] = {{}};"),
            ],
            group_loads: vec![
                format!("if ({beta} != 0.0f && group % {batch} == 0) {{"),
                "    #pragma unroll".into(),
                each_of_the_batch.clone(),
                format!("        {tensor}_words[next] = *reinterpret_cast<const uint4*>(&{at});"),
                "    }".into(),
                "    #pragma unroll".into(),
                each_of_the_batch,
                format!(
                    "        const unsigned loaded[4] = {{{tensor}_words[next].x, {tensor}_words[next].y, {tensor}_words[next].z, {tensor}_words[next].w}};"
                ),
                format!("        tessera_quad_transpose(loaded, {tensor}_pairs[next]);  // back to the accumulators' places"),
                "    }".into(),
                "}".into(),
            ],
            old_pair: format!(
                "tessera_pair_of_bits<{}>({tensor}_pairs[group % {batch}][chunk])",
                crate::operand::pair_type(plan.stored)
            ),
        })
    }

    /// An f32 C: each lane's own pairs (8 bytes, the row's four lanes 32 contiguous bytes), a
    /// batch of groups' worth before the batch's first store, added before the exchange.
    fn f32_pairs(plan: &EpiloguePlan, dst: &OperandText<'_>, warp_cols: &str, beta: &str) -> Self {
        let tensor = &plan.dst.tensor;
        let groups = plan.layout.warp_tile.map_or(1, |[_, cols]| cols / 16);
        let batch = groups.min(DESTINATION_BATCH / 2);
        let row = lane_row(&plan.layout);
        let at = dst.element_at(&row, "warp_col0 + ((group + next) * 2 + chunk) * 8 + lane % 4 * 2");
        Self {
            row_loads: vec![
                format!("// β · {tensor}: this lane's pairs of it, every load of a batch of {batch} groups in flight before the"),
                format!("// batch's first store (a load of {tensor} waits for earlier stores)"),
                format!("float2 {tensor}_pairs[{batch}][2];"),
            ],
            group_loads: vec![
                format!("if ({beta} != 0.0f && group % {batch} == 0) {{"),
                "    #pragma unroll".into(),
                format!("    for (int next = 0; next < {batch} && group + next < {warp_cols} / 16; ++next) {{"),
                "        #pragma unroll".into(),
                "        for (int chunk = 0; chunk < 2; ++chunk) {".into(),
                format!("            {tensor}_pairs[next][chunk] = *reinterpret_cast<const float2*>(&{at});"),
                "        }".into(),
                "    }".into(),
                "}".into(),
            ],
            old_pair: format!("{tensor}_pairs[group % {batch}][chunk]"),
        }
    }
}

/// `copy(&acc.t(), c.tile(..))`: a fragment holding the tile transposed (Cᵀ, as a TF32 wgmma on
/// a B stored [K, N] computes it) stored element by element to the transposed places.
fn transposed_epilogue_source(kernel: &Kernel, copy: &TileCopy, plan: &EpiloguePlan) -> Result<String, RenderError> {
    let fragment = declared_fragment(kernel, &plan.fragment, copy.origin)?;
    let (warp_rows, warp_cols) = warp_tile_names(fragment, &plan.layout);
    let dst_plan = OperandPlan::Global(plan.dst.clone());
    let dst = OperandText::new(&dst_plan);
    let element = plan.stored;
    let element_map = crate::gemm::element_map_source(kernel, plan)?;
    let acc_value = format!("{}[mi][ni][v]", plan.fragment);
    let value = match element_map {
        Some(_) => crate::gemm::element_map_call(plan, &acc_value, 0),
        None => acc_value,
    };
    let target = dst.element_at("row", "col");
    let mut scale = Vec::new();
    let mut store = Vec::new();
    if let Some((alpha, beta)) = &plan.axpby {
        scale.push(format!("value = {alpha} * value;"));
        store.push(format!("if ({beta} != 0.0f) value += {beta} * {};", crate::operand::widened(element, &target)));
    }
    store.push(format!("{target} = {};", crate::operand::narrowed(element, "value")));
    WarpEpilogueTransposedSource {
        dsl: copy.to_string(),
        element_map,
        origins: warp_origin_bindings(kernel, &plan.fragment).into_iter().chain(dst.origin_declarations()).collect(),
        whole_tile: dst.whole_tile().unwrap_or_else(|| "true".into()),
        warp_rows,
        warp_cols,
        m_tile_rows: plan.layout.m_tile_spacing(),
        value,
        scale,
        in_bounds: dst.in_bounds_at("row", "col").unwrap_or_else(|| "true".into()),
        store,
    }
    .render()
    .map_err(template_error("warp_epilogue_transposed.cu"))
}

/// The epilogues of the kernel that store through a [`WideStore`].
fn wide_store_plans(kernel: &Kernel) -> Vec<EpiloguePlan> {
    kernel
        .statements()
        .iter()
        .filter_map(|statement| {
            let tessera_dsl::Statement::Copy(copy) = statement else { return None };
            // a copy stored by TMA goes through its staging buffers instead
            if copy.by_tma && kernel.tma_store_copy().is_some() {
                return None;
            }
            let plan = EpiloguePlan::new(kernel, copy, &kernel.constant_scope()).ok()?;
            (!plan.transposed && plan.layout.wide_store_columns(plan.stored).is_some()).then_some(plan)
        })
        .collect()
}

/// Whether a `copy(&acc, ..)` of the kernel stores through a [`WideStore`] (its helpers are
/// then defined).
pub(crate) fn uses_wide_stores(kernel: &Kernel) -> bool {
    !wide_store_plans(kernel).is_empty()
}

/// Whether a [`WideStore`] of the kernel loads tensors its map reads in place (the helper that
/// turns their pairs' bits back into pairs is then defined).
pub(crate) fn uses_in_place_reads(kernel: &Kernel) -> bool {
    wide_store_plans(kernel).iter().any(|plan| {
        (plan.reads_destination_in_place() && plan.stored.is_half()) || !plan.vector_reads_in_place(kernel).is_empty()
    })
}

/// Whether the kernel uses 16-bit floats anywhere (tensors, scalars, shared buffers).
pub(crate) fn uses_half(kernel: &Kernel) -> bool {
    let params = kernel.params.iter().any(|p| match &p.kind {
        tessera_dsl::ParamKind::Global(tensor) => tensor.element.is_half(),
        tessera_dsl::ParamKind::Scalar(element) => element.is_half(),
    });
    params
        || kernel
            .statements()
            .iter()
            .any(|s| matches!(s, tessera_dsl::Statement::Shared(buffer) if buffer.element.is_half()))
}

/// The tensor-core instructions the kernel's `mma`s run on.
pub(crate) fn tensor_core_instructions(kernel: &Kernel) -> Vec<MmaInstruction> {
    kernel
        .statements()
        .iter()
        .filter_map(|s| match s {
            tessera_dsl::Statement::Mma(mma) => MmaPlan::new(kernel, mma, &kernel.constant_scope()).ok(),
            _ => None,
        })
        .map(|plan| plan.instruction)
        .filter(|instruction| *instruction != MmaInstruction::Ffma)
        .collect()
}

/// Whether an `mma` of the kernel runs on wgmma (which reads shared memory through the async
/// proxy: the pipelines fence the tiles' writes for it).
pub(crate) fn uses_wgmma(kernel: &Kernel) -> bool {
    tensor_core_instructions(kernel).iter().any(|instruction| matches!(instruction, MmaInstruction::Wgmma { .. }))
}

/// After a pipeline that left wgmma groups running: wait for them all, then keep the
/// compiler from touching the accumulators `accs` before.
pub(crate) fn wgmma_drain<'a>(kernel: &Kernel, accs: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut lines =
        vec!["tessera_wgmma_wait<0>();  // the last k-tiles' wgmma groups, before anything reads the accumulators"
            .to_string()];
    for acc in accs {
        let m_tiles = kernel
            .fragment(acc)
            .and_then(|fragment| FragmentLayout::of(fragment, kernel))
            .map_or(1, |layout| layout.warpgroup_m_tiles());
        lines.extend((0..m_tiles).map(|mi| format!("tessera_wgmma_fence_operands({acc}[{mi}]);")));
    }
    lines
}

/// One part of the wgmma product `mma` (validation has checked that it is one), its B read
/// from pipeline stage `stage`.
pub(crate) fn wgmma_part_source(
    kernel: &Kernel,
    mma: &tessera_dsl::Mma,
    stage: &str,
    part: WgmmaPart,
) -> Result<String, RenderError> {
    let plan = MmaPlan::new(kernel, mma, &kernel.constant_scope()).map_err(invalid_plan(kernel))?;
    let MmaInstruction::Wgmma { input, n } = plan.instruction else {
        let message = format!("only a wgmma product renders in parts; `{mma}` runs as {}", plan.instruction);
        return Err(invalid(kernel, mma.origin, &message));
    };
    wgmma_source(kernel, mma, &plan, Some(stage), input, n, 0, part)
}

/// Renders the mma of `plan` when it is a tensor-core one (`None`: the FFMA path renders it).
pub(crate) fn mma_if_tensor_core(
    kernel: &Kernel,
    mma: &tessera_dsl::Mma,
    stage: Option<&str>,
    in_flight: u32,
) -> Option<Result<String, RenderError>> {
    let plan = match MmaPlan::new(kernel, mma, &kernel.constant_scope()) {
        Ok(plan) => plan,
        Err(errors) => return Some(Err(invalid_plan(kernel)(errors))),
    };
    (plan.instruction != MmaInstruction::Ffma).then(|| mma_source(kernel, mma, &plan, stage, in_flight))
}

#[derive(Template)]
#[template(path = "wgmma_helpers.cu", escape = "none")]
struct WgmmaHelpersSource {
    n: i64,
    /// The k extent of one instruction (16, or 8 on TF32).
    k: i64,
    tf32: bool,
    tiles: i64,
    instruction: String,
    /// The register-A form (`tessera_wgmma_register_a`) rather than the descriptor one.
    register_a: bool,
    registers: String,
    outputs: String,
    a_operand: String,
    b_operand: i64,
    accumulate_operand: i64,
    trans_a_operand: i64,
    trans_b_operand: i64,
    /// The first k-step of an `.overwrite()` product: `_overwrite` after the name, scale-d 0,
    /// the accumulators written only.
    overwrite: bool,
    suffix: &'static str,
    scale_d: u32,
}

/// The forms of wgmma a kernel's `mma`s run: (input, n, A from registers, the first k-step
/// of an `.overwrite()` product), each once.
pub(crate) fn wgmma_forms(kernel: &Kernel) -> Vec<(ElementType, i64, bool, bool)> {
    let mut forms = Vec::new();
    for statement in kernel.statements() {
        let tessera_dsl::Statement::Mma(mma) = statement else { continue };
        let Ok(plan) = MmaPlan::new(kernel, mma, &kernel.constant_scope()) else { continue };
        if let MmaInstruction::Wgmma { input, n } = plan.instruction {
            let register_a = plan.wgmma_register_a();
            // every product's k-steps after the first accumulate; an overwriting one's first
            // takes the `_overwrite` form
            let used = [Some((input, n, register_a, false)), mma.overwrite.then_some((input, n, register_a, true))];
            for form in used.into_iter().flatten() {
                if !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
    }
    forms
}

/// `tessera_wgmma` (or, `register_a`, `tessera_wgmma_register_a`; with `_overwrite` after
/// either for an `.overwrite()` product's first k-step) for m64n{n}k16 (k8 on TF32) on
/// `input`: the asm takes n / 2 accumulator registers.
pub(crate) fn wgmma_helpers(
    input: ElementType,
    n: i64,
    register_a: bool,
    overwrite: bool,
) -> Result<String, RenderError> {
    let values = n / 2;
    let registers: Vec<String> = (0..values).map(|r| format!("%{r}")).collect();
    let constraint = if overwrite { "=f" } else { "+f" };
    let outputs: Vec<String> = (0..values).map(|r| format!("\"{constraint}\"(d[{}][{}])", r / 4, r % 4)).collect();
    let wgmma = MmaInstruction::Wgmma { input, n };
    let instruction = wgmma.ptx().unwrap_or_default();
    // A's four registers take four operands where its descriptor takes one
    let a_operands = if register_a { 4 } else { 1 };
    let b_operand = values + a_operands;
    WgmmaHelpersSource {
        n,
        k: wgmma.k_step(),
        tf32: wgmma.is_tf32(),
        tiles: n / 8,
        instruction,
        register_a,
        // eight registers to a line of the asm string
        registers: format!(
            "{{{}}}",
            registers.chunks(8).map(|chunk| chunk.join(", ")).collect::<Vec<_>>().join(", \"\n        \"")
        ),
        outputs: outputs.chunks(8).map(|chunk| chunk.join(", ")).collect::<Vec<_>>().join(",\n          "),
        a_operand: match register_a {
            true => format!("{{%{}, %{}, %{}, %{}}}", values, values + 1, values + 2, values + 3),
            false => format!("%{values}"),
        },
        b_operand,
        accumulate_operand: b_operand + 1,
        trans_a_operand: b_operand + 2,
        trans_b_operand: b_operand + 2 + i64::from(!register_a),
        overwrite,
        suffix: if overwrite { "_overwrite" } else { "" },
        scale_d: u32::from(!overwrite),
    }
    .render()
    .map_err(template_error("wgmma_helpers.cu"))
}
