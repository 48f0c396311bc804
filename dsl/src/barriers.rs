//! Barriers where a shared buffer changes hands: after a copy writes it and before another
//! reads it, and after a copy reads it and before another overwrites it (the next iteration
//! of a grid-stride loop included).

use std::collections::BTreeMap;

use crate::{Barrier, Operand, Statement};

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Use {
    written: bool,
    read: bool,
}

/// `body` with a [`Statement::Sync`] wherever threads would otherwise race on a shared
/// buffer. Explicit `sync()` statements are kept and count.
///
/// ```
/// use tessera_dsl::*;
/// let t = |transposed| Operand::Shared(SharedOperand { buffer: "t".into(), transposed, origin: Origin::default() });
/// let x = Operand::Global(TileOperand { tensor: "x".into(), at: vec![], index: vec![], extent: vec![], transposed: false, origin: Origin::default() });
/// let copy = |src, dst| Statement::Copy(TileCopy { src, dst, order: ItemOrder::RowMajor, axpby: None, map: None, by_tma: false, origin: Origin::default() });
/// let body = vec![copy(x.clone(), t(false)), copy(t(true), x.clone())];
/// let placed = with_barriers(&body);
/// assert_eq!(placed.len(), 3);
/// assert!(matches!(&placed[1], Statement::Sync(b) if b.reason.as_deref() == Some("t: written above, read below")));
/// ```
pub fn with_barriers(body: &[Statement]) -> Vec<Statement> {
    let mut state = BTreeMap::new();
    let mut shared = Vec::new();
    shared_buffers(body, &mut shared);
    place(body, &mut state, &shared)
}

fn shared_buffers(body: &[Statement], out: &mut Vec<String>) {
    for statement in body {
        match statement {
            Statement::Shared(buffer) => out.push(buffer.name.clone()),
            Statement::GridStride(stride) => shared_buffers(&stride.body, out),
            Statement::Pipeline(pipeline) => shared_buffers(&pipeline.body, out),
            _ => {}
        }
    }
}

fn place(body: &[Statement], state: &mut BTreeMap<String, Use>, shared: &[String]) -> Vec<Statement> {
    let mut out = Vec::with_capacity(body.len() + 2);
    for statement in body {
        match statement {
            Statement::Copy(copy) => {
                let reads = shared_name(&copy.src);
                let writes = shared_name(&copy.dst);
                let mut reason = None;
                if let Some(buffer) = reads {
                    if state.get(buffer).is_some_and(|u| u.written) {
                        reason = Some(format!("{buffer}: written above, read below"));
                    }
                }
                if let Some(buffer) = writes {
                    let used = state.get(buffer).copied().unwrap_or_default();
                    if reason.is_none() && used.read {
                        reason = Some(format!("{buffer}: read above, overwritten below"));
                    } else if reason.is_none() && used.written {
                        reason = Some(format!("{buffer}: written above, overwritten below"));
                    }
                }
                if let Some(reason) = reason {
                    out.push(Statement::Sync(Barrier { reason: Some(reason), origin: copy.origin }));
                    state.clear();
                }
                if let Some(buffer) = reads {
                    state.entry(buffer.to_string()).or_default().read = true;
                }
                if let Some(buffer) = writes {
                    state.entry(buffer.to_string()).or_default().written = true;
                }
                out.push(statement.clone());
            }
            Statement::Sync(_) => {
                state.clear();
                out.push(statement.clone());
            }
            Statement::GridStride(stride) => {
                // What one iteration leaves behind is what the next one starts with.
                let mut first = state.clone();
                place(&stride.body, &mut first, shared);
                let mut entry = state.clone();
                for (buffer, used) in first {
                    let slot = entry.entry(buffer).or_default();
                    slot.read |= used.read;
                    slot.written |= used.written;
                }
                let body = place(&stride.body, &mut entry, shared);
                *state = entry;
                let mut stride = stride.clone();
                stride.body = body;
                out.push(Statement::GridStride(stride));
            }
            Statement::Mma(mma) => {
                let mut reason = None;
                for operand in [&mma.a, &mma.b] {
                    if let Some(buffer) = shared_name(operand) {
                        if reason.is_none() && state.get(buffer).is_some_and(|u| u.written) {
                            reason = Some(format!("{buffer}: written above, read below"));
                        }
                    }
                }
                if let Some(reason) = reason {
                    out.push(Statement::Sync(Barrier { reason: Some(reason), origin: mma.origin }));
                    state.clear();
                }
                for operand in [&mma.a, &mma.b] {
                    if let Some(buffer) = shared_name(operand) {
                        state.entry(buffer.to_string()).or_default().read = true;
                    }
                }
                out.push(statement.clone());
            }
            Statement::Pipeline(pipeline) if pipeline.stages >= 2 => {
                // Double buffering has its own fixed schedule (codegen's pipeline template):
                // a barrier after the prologue and one at the end of every step.
                state.clear();
                out.push(statement.clone());
            }
            Statement::Pipeline(pipeline) => {
                let mut first = state.clone();
                place(&pipeline.body, &mut first, shared);
                let mut entry = state.clone();
                for (buffer, used) in first {
                    let slot = entry.entry(buffer).or_default();
                    slot.read |= used.read;
                    slot.written |= used.written;
                }
                let body = place(&pipeline.body, &mut entry, shared);
                *state = entry;
                let mut pipeline = pipeline.clone();
                pipeline.body = body;
                out.push(Statement::Pipeline(pipeline));
            }
            Statement::Thread(thread) => {
                // Per-thread code that indexes a shared buffer hands it over like a copy does;
                // within one statement (a loop, an `if`) no barrier can go, so none is placed.
                let (reads, writes) = thread.indexed();
                let reads: Vec<String> = reads.into_iter().filter(|b| shared.contains(b)).collect();
                let writes: Vec<String> = writes.into_iter().filter(|b| shared.contains(b)).collect();
                let mut reason = None;
                for buffer in reads.iter().filter(|b| state.get(*b).is_some_and(|u| u.written)) {
                    reason.get_or_insert_with(|| format!("{buffer}: written above, read below"));
                }
                for buffer in &writes {
                    let used = state.get(buffer).copied().unwrap_or_default();
                    if used.read {
                        reason.get_or_insert_with(|| format!("{buffer}: read above, overwritten below"));
                    }
                }
                if let Some(reason) = reason {
                    out.push(Statement::Sync(Barrier { reason: Some(reason), origin: thread.origin }));
                    state.clear();
                }
                for buffer in reads {
                    state.entry(buffer).or_default().read = true;
                }
                for buffer in writes {
                    state.entry(buffer).or_default().written = true;
                }
                out.push(statement.clone());
            }
            Statement::Grid(_) | Statement::Shared(_) | Statement::Fragment(_) => out.push(statement.clone()),
        }
    }
    out
}

fn shared_name(operand: &Operand) -> Option<&str> {
    match operand {
        Operand::Shared(shared) => Some(&shared.buffer),
        Operand::Global(_) | Operand::Fragment(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Expr, GridStrideLoop, ItemOrder, Origin, SharedOperand, TileCopy, TileOperand};

    fn shared(name: &str) -> Operand {
        Operand::Shared(SharedOperand { buffer: name.into(), transposed: false, origin: Origin::default() })
    }

    fn global() -> Operand {
        Operand::Global(TileOperand {
            tensor: "x".into(),
            at: vec![],
            index: vec![],
            extent: vec![],
            transposed: false,
            origin: Origin::default(),
        })
    }

    fn copy(src: Operand, dst: Operand) -> Statement {
        Statement::Copy(TileCopy {
            src,
            dst,
            order: ItemOrder::RowMajor,
            axpby: None,
            map: None,
            by_tma: false,
            origin: Origin::default(),
        })
    }

    fn reasons(body: &[Statement]) -> Vec<String> {
        body.iter()
            .flat_map(|s| match s {
                Statement::Sync(b) => vec![b.reason.clone().unwrap_or_else(|| "explicit".into())],
                Statement::GridStride(l) => reasons(&l.body).into_iter().map(|r| format!("loop: {r}")).collect(),
                _ => vec![],
            })
            .collect()
    }

    #[test]
    fn global_only_copies_need_no_barrier() {
        assert!(reasons(&with_barriers(&[copy(global(), global())])).is_empty());
    }

    #[test]
    fn an_explicit_sync_makes_the_automatic_one_unnecessary() {
        let body = [
            copy(global(), shared("t")),
            Statement::Sync(Barrier { reason: None, origin: Origin::default() }),
            copy(shared("t"), global()),
        ];
        assert_eq!(reasons(&with_barriers(&body)), vec!["explicit"]);
    }

    #[test]
    fn a_loop_that_refills_a_buffer_it_read_gets_a_barrier_at_its_top() {
        let body = [Statement::GridStride(GridStrideLoop {
            var: "t".into(),
            count: Expr::int(4),
            body: vec![copy(global(), shared("s")), copy(shared("s"), global())],
            origin: Origin::default(),
        })];
        assert_eq!(
            reasons(&with_barriers(&body)),
            vec!["loop: s: read above, overwritten below", "loop: s: written above, read below"]
        );
    }
}
