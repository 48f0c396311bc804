//! Shared buffers and the copies into and out of them: layouts (padding, swizzle, panels),
//! the bytes they take, and the shapes a copy moves.

use super::*;

impl Checker<'_> {
    /// `.panels()`: a byte swizzle to cut the rows by, no padding, whole panels of whole
    /// 8-row atoms (each panel then starts on the 1024-byte boundary the hardware swizzle needs).
    pub(super) fn panels(&mut self, buffer: &SharedBuffer, layout: &SharedLayout) {
        let Some(span) = layout.swizzle_bytes else {
            self.error(
                buffer.origin,
                format!("`.panels()` on `{}` needs a swizzle span to cut the rows into", buffer.name),
                Some("write `.swizzle_bytes(128).panels()` (or 64, 32)".into()),
            );
            return;
        };
        let element = i64::from(layout.element.size_bytes());
        let row_bytes = layout.cols * element;
        if layout.pad != 0 || row_bytes % span != 0 || layout.rows % 8 != 0 {
            self.error(
                buffer.origin,
                format!(
                    "`.panels()` on `{}` [{}, {}] {}: rows of {row_bytes} B{} must split into {span}-byte panels of whole 8-row atoms ({} rows)",
                    buffer.name,
                    layout.rows,
                    layout.cols,
                    layout.element,
                    if layout.pad != 0 { format!(" padded by {}", layout.pad) } else { String::new() },
                    layout.rows
                ),
                Some(format!(
                    "use a multiple of {} columns and of 8 rows, without `.pad(..)`",
                    span / element
                )),
            );
        }
    }

    pub(super) fn shared_buffer(&mut self, buffer: &SharedBuffer, scope: &Scope) {
        if buffer.shape.len() != 2 {
            self.error(
                buffer.origin,
                format!("shared buffers are 2-D; `{}` has {} dimensions", buffer.name, buffer.shape.len()),
                Some("write shared::<f32>([ROWS, COLS])".into()),
            );
            return;
        }
        for extent in &buffer.shape {
            match extent.eval(scope) {
                Ok(value) if value > 0 => {}
                Ok(value) => {
                    self.error(extent.origin, format!("shared extent `{extent}` is {value}; it must be positive"), None)
                }
                Err(_) => self.error(
                    extent.origin,
                    format!("shared extent `{extent}` is not a compile-time constant"),
                    Some("use a constant from consts(..)".into()),
                ),
            }
        }
        let Some(layout) = SharedLayout::with_scope(buffer, scope) else { return };
        if layout.rows <= 0 || layout.cols <= 0 {
            return;
        }
        if let Some(unit) = layout.swizzle {
            let groups = if unit > 0 { layout.cols / unit } else { 0 };
            if unit <= 0 || layout.cols % unit != 0 || groups & (groups - 1) != 0 {
                self.error(
                    buffer.origin,
                    format!(
                        "swizzle({unit}) on rows of {} elements: a row must split into a power-of-two number of {unit}-element groups",
                        layout.cols
                    ),
                    Some("use a unit that splits the columns into 2, 4, 8, 16 or 32 groups".into()),
                );
            }
        }
        if let Some(span) = layout.swizzle_bytes {
            let row_bytes = layout.row_bytes();
            if layout.swizzle.is_some() || row_bytes % span != 0 {
                let cause = if layout.swizzle.is_some() {
                    "it cannot be combined with `.swizzle(unit)`".to_string()
                } else {
                    format!(
                        "each row is {} elements × {} B = {row_bytes} B, not a multiple of {span} B, so chunks would move between rows",
                        layout.stride(),
                        layout.element.size_bytes()
                    )
                };
                self.error(
                    buffer.origin,
                    format!("`.swizzle_bytes({span})` on `{}`: {cause}", buffer.name),
                    Some(format!(
                        "use rows of a multiple of {span} B (e.g. {} {} elements) or a smaller span (`.swizzle_bytes({})`)",
                        span / i64::from(layout.element.size_bytes()),
                        layout.element,
                        (span / 2).max(32)
                    )),
                );
            }
        }
        if buffer.panels {
            self.panels(buffer, &layout);
        }
        let stages = i64::from(self.kernel.buffer_stages(&buffer.name));
        // Buffers start 16-byte aligned (panels 1024), as SharedMemoryPlan lays them out.
        let alignment = layout.alignment();
        self.shared_bytes = (self.shared_bytes + alignment - 1) / alignment * alignment + layout.bytes() * stages;
        let limit = i64::from(self.target.opt_in_shared_memory_bytes);
        if self.shared_bytes > limit && !self.shared_reported {
            self.shared_reported = true;
            let this = if stages > 1 {
                format!("{stages} stages × {} × {} × {} B", layout.rows, layout.stride(), layout.element.size_bytes())
            } else {
                format!("{} × {} × {} B", layout.rows, layout.stride(), layout.element.size_bytes())
            };
            let bigger: Vec<String> = Target::KNOWN
                .iter()
                .filter(|t| i64::from(t.opt_in_shared_memory_bytes) >= self.shared_bytes)
                .map(|t| format!("target = {} allows {} B", t.name(), t.opt_in_shared_memory_bytes))
                .collect();
            let hint = if bigger.is_empty() || self.kernel.config.target.is_some() {
                "shrink the tile, its padding or its pipeline stages".to_string()
            } else {
                format!(
                    "shrink the tile, its padding or its pipeline stages; or validate for one GPU ({})",
                    bigger.join(", ")
                )
            };
            self.error(
                buffer.origin,
                format!(
                    "shared memory {} B ({:.1} KiB; `{}`: {this}) exceeds the {limit} B ({} KiB) a block may use on {}, even with dynamic shared memory",
                    self.shared_bytes,
                    self.shared_bytes as f64 / 1024.0,
                    buffer.name,
                    limit / 1024,
                    self.target.label
                ),
                Some(hint),
            );
        }
    }

    pub(super) fn copy(&mut self, copy: &TileCopy, bound: &[String], scope: &Scope) {
        for operand in [&copy.src, &copy.dst] {
            match operand {
                Operand::Global(tile) => {
                    for expr in tile.at.iter().chain(&tile.index).chain(&tile.extent) {
                        self.expression(expr, bound);
                    }
                }
                Operand::Shared(shared) => {
                    if self.kernel.shared(&shared.buffer).is_some() && !self.declared.contains(&shared.buffer) {
                        self.error(
                            shared.origin,
                            format!("shared buffer `{}` is used before its `let`", shared.buffer),
                            None,
                        );
                    }
                }
                Operand::Fragment(_) => {}
            }
        }
        if matches!(copy.src, Operand::Fragment(_)) {
            if let Err(errors) = EpiloguePlan::new(self.kernel, copy, scope) {
                for error in errors {
                    self.diagnostics.push(error);
                }
            }
            return;
        }
        if copy.axpby.is_some() {
            self.error(copy.origin, "`.axpby(..)` applies to copies of a fragment into a global tile".into(), None);
        }
        if copy.map.is_some() {
            self.error(copy.origin, "`.map(..)` applies to copies of a fragment into a global tile".into(), None);
        }
        match CopyPlan::new(self.kernel, copy, scope) {
            Ok(plan) => self.buffer_symbols(copy, &plan),
            Err(errors) => {
                for error in errors {
                    self.diagnostics.push(error);
                }
            }
        }
    }

    /// A buffer filled from one tensor and emptied into another carries the first one's
    /// shape symbols: the second must be bounded by the same ones, or its guards are wrong.
    pub(super) fn buffer_symbols(&mut self, copy: &TileCopy, plan: &CopyPlan) {
        match (&plan.src, &plan.dst) {
            (OperandPlan::Global(global), OperandPlan::Shared(shared)) => {
                if let Some((row, col)) = plan.src.logical_symbols() {
                    let (row, col) = (row.unwrap_or_default().to_string(), col.to_string());
                    let physical = if shared.transposed { (col, row) } else { (row, col) };
                    self.buffers.insert(shared.buffer.clone(), (physical, global.tensor.clone()));
                }
            }
            (OperandPlan::Shared(shared), OperandPlan::Global(global)) => {
                let (Some((known, from)), Some((row, col))) =
                    (self.buffers.get(&shared.buffer), plan.dst.logical_symbols())
                else {
                    return;
                };
                let (row, col) = (row.unwrap_or_default().to_string(), col.to_string());
                let wanted = if shared.transposed { (known.1.clone(), known.0.clone()) } else { known.clone() };
                if wanted != (row.clone(), col.clone()) {
                    let message = format!(
                        "`{}` holds a tile of `{from}` bounded by ({}, {}), but this copy writes it to `{}` bounded by ({row}, {col})",
                        shared.buffer, wanted.0, wanted.1, global.tensor
                    );
                    self.error(
                        copy.origin,
                        message,
                        Some(
                            "use the same shape symbols on both tensors (a transpose swaps them: x: (R, C), y: (C, R))"
                                .into(),
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
