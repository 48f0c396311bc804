//! The copies of a cp.async pipeline laid out by [`AsyncCopyMapping`]: per tile, one source
//! and one destination pointer for the thread's first element; every copy at a constant
//! offset from them, issued all at once or in parts spread over an mma's k loop.

use askama::Template;
use tessera_dsl::{AsyncCopyLayout, AsyncCopyMapping, CopyPlan, OperandPlan, TileCopy};

use crate::operand::OperandText;
use crate::statement::template_error;
use crate::RenderError;

#[derive(Template)]
#[template(path = "async_copy_setup.cu", escape = "none")]
struct SetupSource<'a> {
    dsl: String,
    what: &'a str,
    buffer: &'a str,
    stage: &'a str,
    bytes: i64,
    origins: Vec<(String, String)>,
    element: &'static str,
    src_first: String,
    dst_first: String,
    whole_tile: String,
}

#[derive(Template)]
#[template(path = "async_copy_part.cu", escape = "none")]
struct PartSource<'a> {
    buffer: &'a str,
    /// Where `src` and `dst` come from, before the branch on a whole tile.
    before: Vec<String>,
    /// `thread's` (all the copies) or `part's`.
    first: &'static str,
    /// The same, on the edge branch only (where a part's start is computed from its index).
    edge_setup: Vec<String>,
    rows_left: String,
    cols_left: String,
    whole: Vec<String>,
    edge: Vec<String>,
}

/// One global → shared copy of a cp.async pipeline with its mapping.
pub(crate) struct MappedCopy<'a> {
    copy: &'a TileCopy,
    plan: &'a CopyPlan,
    pub(crate) mapping: AsyncCopyMapping,
    buffer: String,
}

impl<'a> MappedCopy<'a> {
    /// `None` when the copy has no [`AsyncCopyMapping`] (it keeps the item-order rendering).
    pub(crate) fn new(copy: &'a TileCopy, plan: &'a CopyPlan) -> Option<Self> {
        let OperandPlan::Global(_) = &plan.src else { return None };
        let OperandPlan::Shared(shared) = &plan.dst else { return None };
        let mapping = AsyncCopyMapping::of(plan)?;
        Some(Self { copy, plan, mapping, buffer: shared.buffer.clone() })
    }

    /// The global tensor this copy reads.
    pub(crate) fn tensor(&self) -> &str {
        match &self.plan.src {
            OperandPlan::Global(g) => &g.tensor,
            OperandPlan::Shared(s) => &s.buffer,
            OperandPlan::Fragment(f) => &f.fragment,
        }
    }

    fn first_row(&self) -> String {
        format!("{}_first_row", self.buffer)
    }

    fn first_col(&self) -> String {
        format!("{}_first_col", self.buffer)
    }

    fn bytes(&self) -> i64 {
        self.mapping.width * i64::from(self.plan.element.size_bytes())
    }

    /// The thread's first element of every tile, declared once before the loops.
    pub(crate) fn first_element(&self) -> Vec<String> {
        let (row, col, how) = match self.mapping.layout {
            AsyncCopyLayout::Rows { threads_per_row } => {
                let col = match self.mapping.width {
                    1 => format!("tid % {threads_per_row}"),
                    w => format!("tid % {threads_per_row} * {w}"),
                };
                (
                    format!("tid / {threads_per_row}"),
                    col,
                    format!("{threads_per_row} threads copy each row, {} B at a time", self.bytes()),
                )
            }
            AsyncCopyLayout::Quads => (
                "tid / 32 * 4 + tid % 4".to_string(),
                "tid % 32 / 4".to_string(),
                "each warp copies 4 rows × 8 columns per\n// instruction: a 32-byte sector of each row, stored to 8 rows of the transposed buffer"
                    .to_string(),
            ),
        };
        vec![
            format!("// {}: {how}", self.copy),
            format!("const int {} = {row};", self.first_row()),
            format!("const int {} = {col};", self.first_col()),
        ]
    }

    /// The per-tile pointers of `copy` (this copy or the one `k + n` ahead) into `stage`.
    pub(crate) fn setup(
        &self,
        copy: &TileCopy,
        plan: &CopyPlan,
        what: &str,
        stage: &str,
    ) -> Result<String, RenderError> {
        let src = OperandText::new(&plan.src);
        let dst = OperandText::new(&plan.dst).with_stage(Some(stage.to_string()));
        SetupSource {
            dsl: copy.to_string(),
            what,
            buffer: &self.buffer,
            stage,
            bytes: self.bytes(),
            origins: src.origin_declarations(),
            element: plan.element.cuda_name(),
            src_first: src.element_at(&self.first_row(), &self.first_col()),
            dst_first: dst.element_at(&self.first_row(), &self.first_col()),
            whole_tile: src.whole_tile().unwrap_or_else(|| "true".into()),
        }
        .render()
        .map_err(template_error("async_copy_setup.cu"))
    }

    /// Where the next part of a tile's copies starts, when parts follow at a constant step:
    /// declared after [`Self::setup`] for copies issued in parts.
    pub(crate) fn running(&self) -> Vec<String> {
        vec![
            format!("const {}* {}_next_src = {}_src;", self.plan.element.cuda_name(), self.buffer, self.buffer),
            format!("int {}_next_dst = 0;", self.buffer),
        ]
    }

    /// The copies: all of them (`part` = `None`), or part `index` (a C expression) of `count`.
    pub(crate) fn part(&self, part: Option<(&str, i64)>) -> Result<String, RenderError> {
        let src = OperandText::new(&self.plan.src);
        let dst = OperandText::new(&self.plan.dst);
        let offsets = &self.mapping.offsets;
        let element = self.plan.element.cuda_name();
        let buffer = &self.buffer;
        let (mut before, mut whole, mut edge_setup) = (Vec::new(), Vec::new(), Vec::new());
        let local = match part {
            None => {
                before.push(format!("const {element}* src = {buffer}_src;"));
                before.push("const int dst = 0;".to_string());
                &offsets[..]
            }
            Some((index, count)) => {
                let each = offsets.len() / count as usize;
                let per_row = self.mapping.per_row as usize;
                let col_step = offsets.get(1).map_or(0, |o| o.1 - offsets[0].1);
                // where part `index` starts, and how far the next one starts from it when parts
                // follow each other at a constant step
                let (row, col, step) = if each.is_multiple_of(per_row) {
                    let rows = (each / per_row) as i64 * self.mapping.row_step;
                    (scaled(index, rows), "0".to_string(), Some((rows, 0)))
                } else {
                    let parts_per_row = (per_row / each) as i64;
                    let step = (count <= parts_per_row).then_some((0, each as i64 * col_step));
                    (
                        scaled(&format!("{index} / {parts_per_row}"), self.mapping.row_step),
                        scaled(&format!("{index} % {parts_per_row}"), each as i64 * col_step),
                        step,
                    )
                };
                before.push(format!("// {buffer}: part {index} of {count} of this thread's {} copies", offsets.len()));
                let from_index = vec![
                    format!("const int row = {row};"),
                    format!("const int col = {col};"),
                    format!("const {element}* src = {buffer}_src + {};", src.offset_between("row", "col")),
                    format!("const int dst = {};", dst.offset_between("row", "col")),
                ];
                match step {
                    // the whole-tile copies run from pointers that move on a part at a time
                    Some((r, c)) => {
                        let (r, c) = (r.to_string(), c.to_string());
                        before.extend([
                            "// from where the previous part left off; the next part's start is computed first, so the"
                                .to_string(),
                            "// copies keep their own registers (overwriting one a copy still reads would wait for it)"
                                .to_string(),
                            format!("const {element}* next_src = {buffer}_next_src;"),
                            format!("const int next_dst = {buffer}_next_dst;"),
                            format!("{buffer}_next_src += {};", src.offset_between(&r, &c)),
                            format!("{buffer}_next_dst += {};", dst.offset_between(&r, &c)),
                        ]);
                        whole.push(format!("const {element}* src = next_src;"));
                        whole.push("const int dst = next_dst;".to_string());
                        edge_setup = from_index;
                    }
                    None => before.extend(from_index),
                }
                &offsets[..each]
            }
        };
        let bytes = self.bytes();
        let element_bytes = i64::from(self.plan.element.size_bytes());
        let width = self.mapping.width;
        let base = self.tensor();
        let at = |pointer: &str, offset: String| {
            if offset == "0" {
                pointer.to_string()
            } else {
                format!("{pointer} + {offset}")
            }
        };
        let mut edge = Vec::new();
        for (row, col) in local {
            let (r, c) = (row.to_string(), col.to_string());
            let d = format!("{}_dst, {}", self.buffer, at("dst", dst.offset_between(&r, &c)));
            let s = at("src", src.offset_between(&r, &c));
            whole.push(format!("tessera_async_copy_to<{bytes}>({d}, {s}, {bytes});"));
            let less = |offset: i64, left: &str| {
                if offset == 0 {
                    format!("0 < {left}")
                } else {
                    format!("{offset} < {left}")
                }
            };
            if width == 1 {
                edge.push(format!(
                    "{{ const bool inside = {} && {}; tessera_async_copy_to<{bytes}>({d}, inside ? {s} : {base}, inside ? {bytes} : 0); }}",
                    less(*row, "rows_left"),
                    less(*col, "cols_left")
                ));
            } else {
                let left = if *col == 0 { "cols_left".to_string() } else { format!("cols_left - {col}") };
                edge.push(format!(
                    "{{ const int valid = {} ? min(max({left}, 0), {width}) * {element_bytes} : 0; tessera_async_copy_to<{bytes}>({d}, valid > 0 ? {s} : {base}, valid); }}",
                    less(*row, "rows_left")
                ));
            }
        }
        let (rows_left, cols_left) = self.left(part.is_some());
        PartSource {
            buffer,
            before,
            first: if part.is_some() { "part's" } else { "thread's" },
            edge_setup,
            rows_left,
            cols_left,
            whole,
            edge,
        }
        .render()
        .map_err(template_error("async_copy_part.cu"))
    }

    /// The rows and columns of the tensor left from the thread's first element (of its part).
    fn left(&self, in_part: bool) -> (String, String) {
        let OperandPlan::Global(g) = &self.plan.src else { return ("0".into(), "0".into()) };
        let (row_origin, col_origin) = (format!("{}_row0", g.tensor), format!("{}_col0", g.tensor));
        let (row_origin, col_origin) = if g.transposed { (col_origin, row_origin) } else { (row_origin, col_origin) };
        let (row_symbol, col_symbol) = match self.plan.src.logical_symbols() {
            Some((Some(r), c)) => (r.to_string(), c.to_string()),
            _ => ("1".to_string(), "1".to_string()),
        };
        let part = |name: &str| if in_part { format!(" - {name}") } else { String::new() };
        (
            format!("{row_symbol} - {row_origin} - {}{}", self.first_row(), part("row")),
            format!("{col_symbol} - {col_origin} - {}{}", self.first_col(), part("col")),
        )
    }
}

/// `index * factor` as C, `0` and `index` where the factor makes them so.
fn scaled(index: &str, factor: i64) -> String {
    match factor {
        0 => "0".to_string(),
        1 => index.to_string(),
        f => format!("{index} * {f}"),
    }
}
