//! The kernel's configuration against the target: the architecture, the block's threads, names
//! the generated CUDA takes itself, `min_blocks`, thread-block clusters and `require(..)`.

use super::*;

impl Checker<'_> {
    /// `target = sm_XY` must name an architecture tessera has limits for.
    pub(super) fn target(&mut self) {
        let Some(cc) = self.kernel.config.target else { return };
        if Target::from_compute_capability(cc / 10, cc % 10).is_none() {
            self.error(
                self.kernel.config.target_origin,
                format!("target = sm_{cc}: tessera knows the limits of {} only", Target::known_names()),
                Some("name one of them, or leave `target` out to validate against every supported GPU".into()),
            );
        } else if self.kernel.config.arch_specific && cc != 90 {
            self.error(
                self.kernel.config.target_origin,
                format!("target = sm_{cc}a: only sm_90 has architecture-specific features (sm_90a: wgmma, setmaxnreg)"),
                Some(format!("write `target = sm_{cc}`")),
            );
        }
    }

    pub(super) fn threads(&mut self) {
        let block = self.kernel.config.threads;
        let origin = self.kernel.config.threads_origin;
        let dims = [block.x, block.y, block.z];
        if dims.contains(&0) {
            self.error(
                origin,
                format!("threads = {block}: a block needs at least one thread in every dimension"),
                Some("use a positive count such as threads = 256".into()),
            );
            return;
        }
        let limit = self.target.max_threads_per_block;
        if block.count() > u64::from(limit) {
            self.error(
                origin,
                format!(
                    "threads = {block}: {} threads per block exceed the limit of {limit} on {}",
                    block.count(),
                    self.target.label
                ),
                Some(format!("use at most {limit} threads and more blocks, e.g. threads = 256")),
            );
        }
        for (axis, (dim, max)) in ["x", "y", "z"].iter().zip(dims.iter().zip(self.target.max_block_dims)) {
            if *dim > max && block.count() <= u64::from(limit) {
                self.error(
                    origin,
                    format!("threads = {block}: {dim} threads along {axis} exceed the limit of {max}"),
                    None,
                );
            }
        }
    }

    /// Parameters, shape symbols and constants share one namespace in the emitted CUDA.
    pub(super) fn names(&mut self) {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut declared: Vec<(&str, Origin, &str)> = Vec::new();
        for param in &self.kernel.params {
            declared.push((&param.name, param.origin, "parameter"));
        }
        let mut symbols_seen = BTreeSet::new();
        for tensor in self.kernel.params.iter().filter_map(Param::tensor) {
            for (symbol, origin) in &tensor.shape {
                if symbols_seen.insert(symbol.as_str()) {
                    declared.push((symbol, *origin, "shape symbol"));
                }
            }
        }
        for constant in &self.kernel.config.constants {
            declared.push((&constant.name, constant.origin, "constant"));
        }
        for buffer in self.kernel.shared_buffers() {
            declared.push((&buffer.name, buffer.origin, "shared buffer"));
        }
        for statement in self.kernel.statements() {
            if let Statement::Fragment(fragment) = statement {
                declared.push((&fragment.name, fragment.origin, "fragment"));
            }
        }
        let leading_dimensions = self.kernel.leading_dimensions();
        for (name, origin, what) in declared {
            if let Some((tensor, _)) = leading_dimensions.iter().find(|(_, ld)| ld == name) {
                self.error(
                    origin,
                    format!("`{name}` is reserved: the generated CUDA passes `{tensor}`'s leading dimension under that name"),
                    Some(format!("rename the {what}")),
                );
            } else if RESERVED.contains(&name) {
                self.error(
                    origin,
                    format!("`{name}` is reserved: the generated CUDA declares it itself"),
                    Some(format!("rename the {what}")),
                );
            } else if !seen.insert(name) {
                self.error(
                    origin,
                    format!("`{name}` is declared twice (here as a {what})"),
                    Some("parameters, shape symbols, constants and shared buffers need distinct names".into()),
                );
            }
        }
    }

    /// `min_blocks = n` asks for n blocks per SM; the threads and shared memory of n blocks
    /// must fit one SM, or the launch bound cannot be met.
    pub(super) fn min_blocks(&mut self) {
        let Some(blocks) = self.kernel.config.min_blocks else { return };
        let origin = self.kernel.config.min_blocks_origin;
        let threads = self.kernel.config.threads.count();
        let per_sm = u64::from(self.target.max_threads_per_sm);
        if threads * u64::from(blocks) > per_sm {
            self.error(
                origin,
                format!(
                    "min_blocks = {blocks} with threads = {}: {blocks} × {threads} = {} threads, but an SM holds {per_sm} on {}",
                    self.kernel.config.threads,
                    threads * u64::from(blocks),
                    self.target.label
                ),
                Some(format!("use min_blocks = {} or fewer threads per block", (per_sm / threads.max(1)).max(1))),
            );
            return;
        }
        let occupancy = crate::Occupancy::new(self.target, threads as u32, self.shared_bytes.max(0) as u32, None);
        if occupancy.blocks_by_shared_memory < blocks
            && self.shared_bytes <= i64::from(self.target.opt_in_shared_memory_bytes)
        {
            self.error(
                origin,
                format!(
                    "min_blocks = {blocks}: each block takes {} B of shared memory ({} B + {} B reserved, in {}-byte units), so an SM's {} B hold only {} on {}",
                    occupancy.shared_bytes_allocated,
                    self.shared_bytes,
                    self.target.reserved_shared_memory_per_block_bytes,
                    self.target.shared_memory_allocation_unit,
                    self.target.shared_memory_per_sm_bytes,
                    occupancy.blocks_by_shared_memory,
                    self.target.label
                ),
                Some(format!(
                    "use min_blocks = {} or shrink the shared buffers",
                    occupancy.blocks_by_shared_memory.max(1)
                )),
            );
        }
    }

    /// `cluster = ..`: up to 8 blocks (the size every sm_90 part guarantees), on sm_90 or newer;
    /// and the thread code's cluster intrinsics only in a kernel that has clusters.
    pub(super) fn clusters(&mut self) {
        let config = &self.kernel.config;
        if let (Some(dims), Some(written)) = (config.cluster, config.cluster_text()) {
            let blocks = config.cluster_blocks();
            if dims.contains(&0) || blocks > 8 {
                self.error(
                    config.cluster_origin,
                    format!("cluster = {written}: a cluster holds 1 to 8 blocks (the portable limit of sm_90); this one holds {blocks}"),
                    Some("use a cluster of at most 8 blocks, e.g. `cluster = 8` or `cluster = (2, 4)`".into()),
                );
            }
            if config.target.is_none_or(|cc| cc < 90) {
                let target = config.target.map_or("no target".to_string(), |cc| format!("target = sm_{cc}"));
                self.error(
                    config.cluster_origin,
                    format!("cluster = {written} with {target}: thread-block clusters need sm_90 or newer"),
                    Some("add `target = sm_90` to the attribute".into()),
                );
            }
            if self.kernel.producer_threads() > 0 {
                self.persistent_clusters(&written);
            }
            return;
        }
        for (function, origin) in self.kernel.thread_calls().into_iter().filter(|(f, _)| f.needs_cluster()) {
            let why = if function.is_cluster_collective() {
                "it reads the other blocks of the block's cluster"
            } else {
                "a block that runs alone has no rank in a cluster"
            };
            self.error(
                origin,
                format!("`{}` in a kernel without clusters: {why}", function.name()),
                Some("run the blocks in clusters: add `cluster = 8, target = sm_90` (or another size up to 8) to the attribute".into()),
            );
        }
    }

    /// Every `require(..)` must hold with this configuration's constants, `THREADS` and `VECTOR`.
    pub(super) fn requirements(&mut self) {
        let config = &self.kernel.config;
        let scope = self
            .kernel
            .constant_scope()
            .with("THREADS", config.threads.count() as i64)
            .with("VECTOR", i64::from(config.vector.get()));
        let symbols = self.kernel.shape_symbols();
        for requirement in &config.requirements {
            if requirement.names().iter().any(|name| symbols.contains(name)) {
                // a shape's: checked at launch, once its names other than the symbols are known
                if let Some(unknown) =
                    requirement.names().into_iter().find(|name| !symbols.contains(name) && scope.get(name).is_none())
                {
                    self.error(
                        requirement.origin,
                        format!("require({requirement}): `{unknown}` is neither a constant nor a shape symbol"),
                        Some("a requirement may use integers, constants, THREADS, VECTOR and shape symbols".into()),
                    );
                }
                continue;
            }

            match requirement.holds(&scope) {
                Ok(true) => {}
                Ok(false) => {
                    // the value of each side that is more than a literal
                    let sides: Vec<String> = [&requirement.lhs, &requirement.rhs]
                        .into_iter()
                        .filter(|side| !matches!(side.kind, ExprKind::Int(_) | ExprKind::Name(_)))
                        .filter_map(|side| side.eval(&scope).ok().map(|value| format!("{side} is {value}")))
                        .collect();
                    let sides = if sides.is_empty() { String::new() } else { format!(": {}", sides.join(", ")) };
                    self.error(
                        requirement.origin,
                        format!("require({requirement}) does not hold with {}{sides}", requirement.values(&scope)),
                        Some("the kernel's body relies on it: choose constants that keep it".into()),
                    );
                }
                Err(error) => self.error(
                    requirement.origin,
                    format!("require({requirement}): {error}"),
                    Some("a requirement may use integers, constants, THREADS, VECTOR and shape symbols".into()),
                ),
            }
        }
    }
}
