//! The autotuner without a GPU: the validator prunes before anything compiles, survivors are
//! compiled by NVRTC (needs libnvrtc, as in CI), the fastest measurement wins, and the cache
//! refuses a record whose source or device changed.

use tessera::catalog::sgemm;
use tessera::dsl::{Kernel, TuneSpace, VectorWidth};
use tessera::runtime::tune::{self, Measure, Outcome};
use tessera::{Arch, Lookup, TuneCache};

/// Pretends BK = 16 is twice as fast as BK = 8, and counts what it was asked to time.
struct FakeMeasure {
    calls: usize,
}

impl Measure for FakeMeasure {
    fn measure(&mut self, kernel: &Kernel, source: &str) -> Result<f64, String> {
        self.calls += 1;
        assert!(source.contains(&format!("constexpr int BK = {};", kernel.config.constant("BK").unwrap())));
        Ok(if kernel.config.constant("BK") == Some(16) { 0.5 } else { 1.0 })
    }
}

fn small_space() -> TuneSpace {
    TuneSpace {
        // TM = 32 asks for 32 × 8 accumulators: over the register budget, pruned unbuilt
        constants: vec![("BK".into(), vec![8, 16]), ("TM".into(), vec![8, 32])],
        vectors: vec![VectorWidth::W4],
        min_blocks: vec![Some(2)],
    }
}

#[test]
fn the_tuner_prunes_before_compiling_and_the_fastest_measurement_wins() {
    let definition = &sgemm::sgemm_v6::KERNEL;
    let binding = vec![("M".to_string(), 1000), ("K".to_string(), 1000), ("N".to_string(), 1000)];
    let mut fake = FakeMeasure { calls: 0 };
    let mut progress = Vec::new();
    let report =
        tune::tune(definition, &small_space(), Arch::SM_90, &binding, &mut fake, &mut |p| progress.push(p)).unwrap();
    assert_eq!(report.trials.len(), 4);
    let pruned: Vec<_> = report.trials.iter().filter(|t| matches!(t.outcome, Outcome::Pruned(_))).collect();
    assert_eq!(pruned.len(), 2, "{:#?}", report.trials);
    assert!(pruned.iter().all(|t| t.candidate.config.constant("TM") == Some(32)));
    assert!(
        matches!(&pruned[0].outcome, Outcome::Pruned(reason) if reason.contains("thread tile")),
        "{:?}",
        pruned[0].outcome
    );
    assert_eq!(fake.calls, 2, "only the two valid candidates are timed");
    let (winner, ms) = report.winner().unwrap();
    assert_eq!((winner.config.constant("BK"), ms), (Some(16), 0.5));
    assert_eq!(report.shape_class, "K=1024v,M=1024v,N=1024v");
    assert!(!progress.is_empty());
}

#[test]
fn a_stored_winner_is_found_again_and_refused_once_the_kernel_changes() {
    let definition = &sgemm::sgemm_v6::KERNEL;
    let binding = vec![("M".to_string(), 512), ("K".to_string(), 512), ("N".to_string(), 512)];
    let report =
        tune::tune(definition, &small_space(), Arch::SM_90, &binding, &mut FakeMeasure { calls: 0 }, &mut |_| {})
            .unwrap();
    let record = tune::winning_record(definition, &report, "Fake GPU", Arch::SM_90).unwrap();
    let path = std::env::temp_dir().join(format!("tessera-tune-test-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let cache = TuneCache::new(&path);
    cache.store(record).unwrap();
    match cache.lookup(definition.name(), definition.cuda_source(), "Fake GPU", Arch::SM_90, &report.shape_class) {
        Lookup::Found(found) => assert_eq!(found.config.constant("BK"), Some(16)),
        other => panic!("expected the stored winner, got {other:?}"),
    }
    let edited = definition.cuda_source().replace("BK = 16", "BK = 32");
    assert!(matches!(
        cache.lookup(definition.name(), &edited, "Fake GPU", Arch::SM_90, &report.shape_class),
        Lookup::Refused { .. }
    ));
    assert!(matches!(
        cache.lookup(definition.name(), definition.cuda_source(), "Other GPU", Arch::SM_90, &report.shape_class),
        Lookup::Refused { .. }
    ));
}

#[test]
fn candidates_never_ask_for_vectors_the_shapes_rows_cannot_hold() {
    let definition = &sgemm::sgemm_v6::KERNEL;
    // rows of 4095 elements: no 64- or 128-bit access can stay aligned
    let binding = vec![("M".to_string(), 4095), ("K".to_string(), 4095), ("N".to_string(), 4095)];
    // at 32-bit accesses, holding registers to 128 for two blocks per SM spills: let it go
    let space = TuneSpace { min_blocks: vec![Some(2), None], ..small_space() };
    let report =
        tune::tune(definition, &space, Arch::SM_90, &binding, &mut FakeMeasure { calls: 0 }, &mut |_| {}).unwrap();
    assert!(report.trials.iter().any(|t| matches!(t.outcome, Outcome::Spills(_))), "{:#?}", report.trials);
    assert!(report.trials.iter().all(|t| t.candidate.config.vector == VectorWidth::W1), "{:#?}", report.trials);
    assert!(report.winner().is_some(), "{:#?}", report.trials);
}

#[test]
fn a_requirement_prunes_every_candidate_that_breaks_it() {
    let kernel = tessera::catalog::transpose::transpose_sector_aligned::KERNEL.ir().unwrap();
    let space = TuneSpace {
        // TR = 60 and 36 break `require(TR % 8 == 0)`: the stores would leave 32-byte alignment
        constants: vec![("TR".into(), vec![36, 60, 64, 128])],
        vectors: vec![VectorWidth::W1],
        min_blocks: vec![None],
    };
    let candidates = space.candidates(kernel);
    assert_eq!(candidates.len(), 4);
    for (candidate, checked) in candidates {
        let tr = candidate.config.constant("TR").unwrap();
        match checked {
            Ok(()) => assert_eq!(tr % 8, 0, "TR = {tr} was not pruned"),
            Err(errors) => {
                assert_ne!(tr % 8, 0, "TR = {tr} was pruned: {errors}");
                assert!(errors.to_string().contains(&format!("require(TR % 8 == 0) does not hold with TR = {tr}")));
            }
        }
    }
}

/// Tuning for one GPU keeps the configurations only that GPU can hold: V9 with BK = 32 and
/// BN = 256 needs 149 KiB of shared memory for its three stages — over the 99 KiB every
/// supported GPU allows, under the 227 KiB of an sm_90 — and then renders for sm_90 alone.
#[test]
fn tuning_for_sm_90_keeps_configurations_over_the_portable_shared_memory_limit_and_targets_them() {
    let kernel = sgemm::sgemm_v9::KERNEL.ir().unwrap();
    let space = TuneSpace {
        constants: vec![("BN".into(), vec![128, 256]), ("BK".into(), vec![16, 32]), ("TN".into(), vec![16])],
        vectors: vec![VectorWidth::W4],
        min_blocks: vec![None],
    };
    let big = |c: &tessera::dsl::Candidate| c.config.constant("BN") == Some(256) && c.config.constant("BK") == Some(32);
    let portable = space.candidates(kernel);
    let (_, checked) = portable.iter().find(|(c, _)| big(c)).unwrap();
    let message = checked.as_ref().unwrap_err().iter().next().unwrap().message.clone();
    assert!(message.contains("exceeds the 101376 B"), "{message}");

    let for_sm_90 = space.candidates_for(kernel, Some(&tessera::dsl::Target::SM_90));
    let (candidate, checked) = for_sm_90.iter().find(|(c, _)| big(c)).unwrap();
    assert!(checked.is_ok(), "{checked:?}");
    assert_eq!(candidate.config.target, Some(90));
    // the others still render for every GPU
    assert!(for_sm_90.iter().filter(|(c, _)| !big(c)).all(|(c, checked)| checked.is_ok() && c.config.target.is_none()));
    let mut tuned = kernel.clone();
    tuned.config = candidate.config.clone();
    let source = tessera::codegen::render(&tuned).unwrap();
    assert!(source.contains("target = sm_90") && source.contains("extern __shared__"), "{}", &source[..400]);
}

/// A catalog kernel's name, declared IR, and its candidates with whether each validated.
type Judged = (&'static str, &'static Kernel, Vec<(tessera::dsl::Candidate, bool)>);

/// Every catalog kernel `tessera tune` takes, at `value` for every shape symbol: the
/// candidates `tune::tune` would try on sm_90, validated (nothing compiles).
fn catalog_candidates(value: i64) -> Vec<Judged> {
    tessera::catalog::all()
        .into_iter()
        .map(|definition| {
            let kernel = definition.ir().unwrap();
            let binding: Vec<(String, i64)> =
                kernel.shape_symbols().into_iter().map(|s| (s.to_string(), value)).collect();
            let candidates = tune::candidates(kernel, &TuneSpace::around(kernel), Arch::SM_90, &binding)
                .into_iter()
                .map(|(candidate, checked)| (candidate, checked.is_ok()))
                .collect();
            (definition.name(), kernel, candidates)
        })
        .collect()
}

/// The declared configuration always compiles, so it must survive pruning: `vector = 8`
/// kernels (tensor cores, TMA — HGEMM, attention) were judged at a width of 4 the launch
/// never picks at aligned shapes, and the tuner's thread count ignored `consumers = 2` (V14),
/// so every candidate of those kernels was pruned and nothing was measured.
#[test]
fn every_catalog_kernel_keeps_its_declared_configuration_among_the_valid_candidates() {
    let missing: Vec<&str> = catalog_candidates(1024)
        .into_iter()
        .filter(|(_, kernel, candidates)| !candidates.iter().any(|(c, ok)| *ok && c.config == kernel.config))
        .map(|(name, _, _)| name)
        .collect();
    assert!(missing.is_empty(), "the declared configuration was pruned or not tried: {missing:?}");
}

/// At rows no vector holds (an odd length), the tuner times what the launch runs: the width
/// narrowed to 1, a TMA pipeline on cp.async; the declared tiles still validate.
#[test]
fn at_unaligned_shapes_every_catalog_kernel_keeps_its_declared_tiles_narrowed() {
    let missing: Vec<&str> = catalog_candidates(1001)
        .into_iter()
        .filter(|(_, kernel, candidates)| {
            !candidates.iter().any(|(c, ok)| {
                *ok && c.config.constants == kernel.config.constants
                    && c.config.threads == kernel.config.threads
                    && c.config.min_blocks == kernel.config.min_blocks
            })
        })
        .map(|(name, _, _)| name)
        .collect();
    assert!(missing.is_empty(), "no valid narrowed declared configuration: {missing:?}");
}

#[test]
fn candidates_keep_the_declared_thread_block_where_the_fragment_needs_as_many_threads() {
    // V14: two consumer warpgroups, each holding a 64 × 256 fragment: 256 threads, not 128
    let v14 = tessera::catalog::hgemm::hgemm_v14_f16::KERNEL.ir().unwrap();
    let only_declared = TuneSpace { constants: vec![], vectors: vec![v14.config.vector], min_blocks: vec![None] };
    let binding = vec![("M".to_string(), 4096), ("N".to_string(), 4096), ("K".to_string(), 4096)];
    let candidates = tune::candidates(v14, &only_declared, Arch::SM_90, &binding);
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].0.config.threads.count(), 256);
    assert!(candidates[0].1.is_ok(), "{:?}", candidates[0].1);
    // threads = (16, 16) stays 2-D: the 16 × 16 fragment of 1 × 1 thread tiles needs 256
    let naive = sgemm::sgemm_naive::KERNEL.ir().unwrap();
    let candidates = tune::candidates(naive, &TuneSpace::around(naive), Arch::SM_90, &binding);
    assert!(candidates.iter().any(|(c, ok)| ok.is_ok() && c.config == naive.config), "{candidates:#?}");
}

/// `fixed(D = 128, CAUSAL = 1)`: constants that say what a kernel computes (attention's head
/// dim and mask, the row capacity of a softmax or norm) are never varied, so a tuned record
/// cannot swap in a kernel that computes something else. Every valid candidate keeps them.
#[test]
fn the_tuner_never_varies_a_fixed_constant() {
    let mut kernels_with_fixed = 0;
    for (name, kernel, candidates) in catalog_candidates(1024) {
        let fixed: Vec<_> = kernel.config.constants.iter().filter(|c| c.fixed).collect();
        if fixed.is_empty() {
            continue;
        }
        kernels_with_fixed += 1;
        for (candidate, _) in &candidates {
            for constant in &fixed {
                assert_eq!(
                    candidate.config.constant(&constant.name),
                    Some(constant.value),
                    "{name}: candidate {candidate} changes the fixed {}",
                    constant.name
                );
            }
        }
    }
    // the 26 attention kernels but the two Δ ones, the norms, the softmaxes
    assert!(kernels_with_fixed >= 24 + 8 + 6, "{kernels_with_fixed} kernels declare fixed constants");
}

/// A warp per row, its rows a block a constant that the kernel does not tie to THREADS / 32:
/// WARP_ROWS = 8 on 4 warps leaves half the rows unwritten.
#[tessera::tile_kernel(threads = 128, vector = 1, consts(WARP_ROWS = 4))]
fn row_sums_untied(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (bx,) = grid(cdiv(R, WARP_ROWS));
    let row = bx * WARP_ROWS + warp_index();
    if row < R {
        let mut s = 0.0f32;
        for c in (lane()..C).step_by(32) {
            s += x[[row, c]];
        }
        let total = warp_sum(s);
        if lane() == 0 {
            y[row] = total;
        }
    }
}

/// On a GPU the tuner runs each candidate once and compares what it wrote with the declared
/// configuration's before timing it: WARP_ROWS = 8 (faster, and wrong) is refused, not crowned.
#[test]
#[ignore = "needs a CUDA GPU"]
fn on_a_gpu_a_candidate_that_writes_other_results_is_refused() {
    use tessera::dsl::Candidate;
    let gpu = tessera::Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"));
    let definition = &row_sums_untied::KERNEL;
    let binding = vec![("R".to_string(), 4096), ("C".to_string(), 512)];
    let space = TuneSpace {
        constants: vec![("WARP_ROWS".into(), vec![2, 4, 8])],
        vectors: vec![VectorWidth::W1],
        min_blocks: vec![None],
    };
    let mut measure = tune::GpuMeasure::new(&gpu, definition, &binding, &[]).unwrap();
    let arch = gpu.arch();
    let report = tune::tune(definition, &space, arch, &binding, &mut measure, &mut |_| {}).unwrap();
    let rows = |c: &Candidate| c.config.constant("WARP_ROWS");
    let outcome =
        |warp_rows: i64| report.trials.iter().find(|t| rows(&t.candidate) == Some(warp_rows)).map(|t| &t.outcome);
    assert!(
        matches!(outcome(8), Some(Outcome::Failed(why)) if why.contains("wrong results") && why.contains("`y`")),
        "{:#?}",
        report.trials
    );
    // 2 rows a block on 4 warps writes every row (twice, the same value): it agrees
    assert!(matches!(outcome(2), Some(Outcome::Measured { .. })), "{:#?}", report.trials);
    assert!(matches!(outcome(4), Some(Outcome::Measured { .. })), "{:#?}", report.trials);
    assert_ne!(report.winner().and_then(|(c, _)| rows(c)), Some(8));
}
