//! The configuration space of a kernel, for the autotuner: every variant of its constants,
//! vector width and occupancy hint, each checked by [`validate`] before anything compiles.

use crate::{validate, Config, Diagnostics, FragmentLayout, Kernel, Statement, Target, ThreadBlock, VectorWidth};

/// A configuration of a kernel, as the tuner tries it.
///
/// ```
/// use tessera_dsl::{Candidate, Config, Constant};
/// let candidate = Candidate { config: Config { constants: vec![Constant::new("BM", 64)], ..Config::default() } };
/// assert_eq!(candidate.to_string(), "threads = 256, vector = 1, BM = 64");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub config: Config,
}

impl std::fmt::Display for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "threads = {}, vector = {}", self.config.threads, self.config.vector)?;
        if let Some(blocks) = self.config.min_blocks {
            write!(f, ", min_blocks = {blocks}")?;
        }
        for constant in &self.config.constants {
            write!(f, ", {} = {}", constant.name, constant.value)?;
        }
        Ok(())
    }
}

/// Which values each knob may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneSpace {
    /// Per constant, the values to try.
    pub constants: Vec<(String, Vec<i64>)>,
    pub vectors: Vec<VectorWidth>,
    pub min_blocks: Vec<Option<u32>>,
}

impl TuneSpace {
    /// Halves and doubles of every constant (powers of two stay powers of two), the declared
    /// vector width (narrower ones are what launch falls back to anyway), and the declared
    /// occupancy hint, none and 2.
    ///
    /// ```
    /// use tessera_dsl::{Config, Constant, Kernel, Origin, TuneSpace, VectorWidth};
    /// let kernel = Kernel {
    ///     name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(),
    ///     config: Config { vector: VectorWidth::W4, constants: vec![Constant::new("BK", 8)], ..Config::default() },
    /// };
    /// let space = TuneSpace::around(&kernel);
    /// assert_eq!(space.constants, vec![("BK".to_string(), vec![4, 8, 16])]);
    /// assert_eq!(space.vectors, vec![VectorWidth::W4]);
    /// ```
    pub fn around(kernel: &Kernel) -> Self {
        let constants = kernel
            .config
            .constants
            .iter()
            .map(|c| {
                let mut values = vec![c.value];
                if c.fixed {
                    // what the kernel computes, not how: one value
                    return (c.name.clone(), values);
                }
                if c.value > 1 && c.value % 2 == 0 {
                    values.insert(0, c.value / 2);
                }
                if c.value > 0 {
                    values.push(c.value * 2);
                }
                (c.name.clone(), values)
            })
            .collect();
        let vectors = vec![kernel.config.vector];
        let mut min_blocks = vec![kernel.config.min_blocks];
        for option in [None, Some(2)] {
            if !min_blocks.contains(&option) {
                min_blocks.push(option);
            }
        }
        Self { constants, vectors, min_blocks }
    }

    /// Every combination, each with its validation against the limits every supported GPU
    /// shares: `Ok` candidates can be compiled, the others are pruned with the reason.
    pub fn candidates(&self, kernel: &Kernel) -> Vec<(Candidate, Result<(), Diagnostics>)> {
        self.candidates_for(kernel, None)
    }

    /// The same, tuning for one GPU: a candidate only that GPU can run (more shared memory
    /// than the portable limit, say) is kept with `target` set to it, so it renders, and
    /// launches, for that architecture alone.
    ///
    /// ```
    /// use tessera_dsl::{Config, Constant, Kernel, Origin, Target, TuneSpace};
    /// let kernel = Kernel {
    ///     name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(),
    ///     config: Config { constants: vec![Constant::new("BK", 8)], ..Config::default() },
    /// };
    /// let space = TuneSpace::around(&kernel);
    /// let portable = space.candidates(&kernel);
    /// let for_sm_90 = space.candidates_for(&kernel, Some(&Target::SM_90));
    /// assert_eq!(portable.len(), for_sm_90.len()); // the same candidates, judged for one GPU
    /// ```
    pub fn candidates_for(
        &self,
        kernel: &Kernel,
        device: Option<&Target>,
    ) -> Vec<(Candidate, Result<(), Diagnostics>)> {
        let mut configs = vec![kernel.config.clone()];
        for (name, values) in &self.constants {
            configs = configs
                .into_iter()
                .flat_map(|config| {
                    values.iter().map(move |value| {
                        let mut config = config.clone();
                        if let Some(constant) = config.constants.iter_mut().find(|c| &c.name == name) {
                            constant.value = *value;
                        }
                        config
                    })
                })
                .collect();
        }
        let mut out = Vec::new();
        for config in configs {
            for vector in &self.vectors {
                for min_blocks in &self.min_blocks {
                    let mut candidate = kernel.clone();
                    candidate.config = Config { vector: *vector, min_blocks: *min_blocks, ..config.clone() };
                    derive_threads(&mut candidate);
                    // a candidate that keeps the declared `target = sm_XY` is judged for it
                    let mut checked = validate(&candidate, &candidate.target());
                    if let (Err(_), Some(target), None) = (&checked, device, candidate.config.target) {
                        if validate(&candidate, target).is_ok() {
                            candidate.config.target = Some(target.compute_capability);
                            checked = Ok(());
                        }
                    }
                    out.push((Candidate { config: candidate.config }, checked));
                }
            }
        }
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// A kernel whose fragment fixes its thread count gets that count (a 64×64 block tile of 8×8
/// thread tiles needs 64 threads, whatever the declared kernel had).
fn derive_threads(kernel: &mut Kernel) {
    let scope = kernel.constant_scope();
    let fragment = kernel.statements().into_iter().find_map(|s| match s {
        Statement::Fragment(f) => FragmentLayout::with_scope(f, &scope),
        _ => None,
    });
    if let Some(layout) = fragment {
        if layout.thread_rows > 0 && layout.thread_cols > 0 && layout.threads() > 0 {
            // with `consumers = n` each group of compute threads holds a whole fragment
            let threads = layout.threads() as u64 * u64::from(kernel.consumer_groups());
            // the same count keeps the declared shape (`threads = (16, 16)` stays 2-D)
            if threads != kernel.config.threads.count() {
                kernel.config.threads = ThreadBlock::linear(u32::try_from(threads).unwrap_or(u32::MAX));
            }
        }
    }
}

/// The class of a shape for the tuning cache: each extent rounded up to a power of two, and
/// whether it is a multiple of 4 (vector accesses), e.g. `K=1024v,M=4096s,N=4096v`.
///
/// ```
/// let class = tessera_dsl::shape_class(&[("M".into(), 4095), ("N".into(), 1024)]);
/// assert_eq!(class, "M=4096s,N=1024v");
/// ```
pub fn shape_class(binding: &[(String, i64)]) -> String {
    let mut parts: Vec<String> = binding
        .iter()
        .map(|(name, value)| {
            let bucket = (*value).max(1).unsigned_abs().next_power_of_two();
            format!("{name}={bucket}{}", if value % 4 == 0 { "v" } else { "s" })
        })
        .collect();
    parts.sort();
    parts.join(",")
}

/// Why [`configure`] could not give a kernel the configuration asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigureError {
    #[error("{what} = {value}: expected a small non-negative integer")]
    NotUnsigned { what: &'static str, value: i64 },
    #[error("vector = {value}: expected 1, 2 or 4")]
    VectorWidth { value: i64 },
    #[error("`{kernel}` has no constant `{constant}`; it has {}threads, vector, min_blocks", known.iter().map(|name| format!("{name}, ")).collect::<String>())]
    UnknownConstant { kernel: String, constant: String, known: Vec<String> },
    #[error("`{kernel}` with {} is invalid:\n{diagnostics}", overrides.iter().map(|(name, value)| format!("{name} = {value}")).collect::<Vec<_>>().join(", "))]
    Invalid { kernel: String, overrides: Vec<(String, i64)>, diagnostics: Diagnostics },
}

/// `kernel` at another configuration: each override names a constant, or `threads`,
/// `vector` or `min_blocks` (0: none). The result is validated against the portable limits.
///
/// ```
/// use tessera_dsl::{configure, Config, ConfigureError, Constant, Kernel, Origin};
/// let kernel = Kernel {
///     name: "k".into(), doc: None, params: vec![], body: vec![], origin: Origin::default(),
///     config: Config { constants: vec![Constant::new("BK", 8)], ..Config::default() },
/// };
/// let changed = configure(&kernel, &[("BK".into(), 16), ("threads".into(), 128)]).unwrap_err();
/// assert!(changed.to_string().contains("never says how blocks map to tiles"), "{changed}"); // a toy kernel with no body
/// let unknown = configure(&kernel, &[("BQ".into(), 16)]).unwrap_err();
/// assert!(matches!(&unknown, ConfigureError::UnknownConstant { constant, .. } if constant == "BQ"));
/// assert!(unknown.to_string().contains("no constant `BQ`; it has BK, threads"), "{unknown}");
/// ```
pub fn configure(kernel: &Kernel, overrides: &[(String, i64)]) -> Result<Kernel, ConfigureError> {
    let mut configured = kernel.clone();
    for (name, value) in overrides {
        let value = *value;
        let unsigned =
            |what: &'static str| u32::try_from(value).map_err(|_| ConfigureError::NotUnsigned { what, value });
        match name.as_str() {
            "threads" => configured.config.threads = ThreadBlock::linear(unsigned("threads")?),
            "vector" => {
                configured.config.vector =
                    VectorWidth::new(unsigned("vector")?).ok_or(ConfigureError::VectorWidth { value })?
            }
            "min_blocks" => configured.config.min_blocks = Some(unsigned("min_blocks")?).filter(|b| *b > 0),
            constant => match configured.config.constants.iter_mut().find(|c| c.name == constant) {
                Some(c) => c.value = value,
                None => {
                    return Err(ConfigureError::UnknownConstant {
                        kernel: kernel.name.clone(),
                        constant: constant.to_string(),
                        known: kernel.config.constants.iter().map(|c| c.name.clone()).collect(),
                    });
                }
            },
        }
    }
    validate(&configured, &configured.target()).map_err(|diagnostics| ConfigureError::Invalid {
        kernel: kernel.name.clone(),
        overrides: overrides.to_vec(),
        diagnostics,
    })?;
    Ok(configured)
}
