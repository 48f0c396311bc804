//! The simulation's 16-bit floats and tensor-core warp instructions, on raw CUDA C: `__half` and
//! `__nv_bfloat16` convert and round bit for bit as CUDA does; `ldmatrix` hands every lane the
//! values the PTX ISA's fragment layouts say, and `mma.sync` computes the documented f32 fmaf
//! chain from them; a warp that is not whole, or not together, at one of them is an error,
//! never a hang. All of it runs in CI, without a GPU.

use tessera::half::{bf16, f16};
use tessera::{Argument, Error, Order, Simulator};

const TWO_ORDERS: &[Order] = &[Order::Forward, Order::Reverse];
const THREE_ORDERS: &[Order] = &[Order::Forward, Order::Reverse, Order::Shuffled { seed: 7 }];

fn simulator() -> Simulator {
    Simulator::new().unwrap_or_else(|e| panic!("the simulation needs a host C++ compiler: {e}"))
}

/// A deterministic stream of pseudo-random numbers (Knuth's MMIX LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    }
}

/// The two 16-bit element types, named as Rust and CUDA name them.
trait Half: tessera::runtime::Element + std::fmt::Debug {
    const CUDA: &'static str;
    const AS_USHORT: &'static str;
    fn from_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
    fn to_bits(self) -> u16;
}

impl Half for bf16 {
    const CUDA: &'static str = "__nv_bfloat16";
    const AS_USHORT: &'static str = "__bfloat16_as_ushort";
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn to_bits(self) -> u16 {
        bf16::to_bits(self)
    }
}

impl Half for f16 {
    const CUDA: &'static str = "__half";
    const AS_USHORT: &'static str = "__half_as_ushort";
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn to_bits(self) -> u16 {
        f16::to_bits(self)
    }
}

// ── ldmatrix ─────────────────────────────────────────────────────────────────────────────

/// A 16 × 16 tile staged in shared memory, read by every ldmatrix form; each lane writes its
/// 14 registers: x4 (4), x4.trans (4), x2 (2), x2.trans (2), x1, x1.trans. Lane l gives the
/// row (l % 16 + shift) % 16, columns (l / 16) · 8 ..: matrix j (lanes 8j .. 8j + 7) is the 8 × 8
/// block of rows (j % 2) · 8 .., columns (j / 2) · 8 ... The x2 and x1 forms use only lanes
/// 0-15 and 0-7: the other lanes give a misaligned address, which must not matter.
fn ldmatrix_source(element: &str) -> String {
    format!(
        r#"
extern "C" __global__ void ldmatrix_layout(const {element}* __restrict__ tile, unsigned* __restrict__ out, int shift)
{{
    __shared__ __align__(16) {element} s[16 * 16];
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) s[i] = tile[i];
    __syncthreads();
    const {element}* row = &s[((lane % 16 + shift) % 16) * 16 + lane / 16 * 8];
    const void* unusable = reinterpret_cast<const char*>(&s[0]) + 2;
    unsigned x4[4], x4t[4], x2[2], x2t[2], x1[1], x1t[1];
    tessera_ldmatrix_x4<false>(x4, row);
    tessera_ldmatrix_x4<true>(x4t, row);
    tessera_ldmatrix_x2<false>(x2, lane < 16 ? row : unusable);
    tessera_ldmatrix_x2<true>(x2t, lane < 16 ? row : unusable);
    tessera_ldmatrix_x1<false>(x1, lane < 8 ? row : unusable);
    tessera_ldmatrix_x1<true>(x1t, lane < 8 ? row : unusable);
    unsigned* mine = out + lane * 14;
    for (int j = 0; j < 4; ++j) mine[j] = x4[j];
    for (int j = 0; j < 4; ++j) mine[4 + j] = x4t[j];
    for (int j = 0; j < 2; ++j) mine[8 + j] = x2[j];
    for (int j = 0; j < 2; ++j) mine[10 + j] = x2t[j];
    mine[12] = x1[0];
    mine[13] = x1t[0];
}}
"#
    )
}

/// Element (row, col) of the test tile: distinct small integers, exact in both types.
fn tile_value(row: usize, col: usize) -> f32 {
    (row * 16 + col + 1) as f32
}

/// What the PTX ISA says register j of `lane` holds after ldmatrix of the tile: matrix j is
/// the 8 × 8 block at rows (j % 2) · 8, columns (j / 2) · 8; without .trans, row lane / 4,
/// elements 2 (lane % 4) and the next (low half first); with .trans, elements
/// [2 (lane % 4)][lane / 4] and [2 (lane % 4) + 1][lane / 4] of the stored block.
fn expected_register<T: Half>(lane: usize, j: usize, trans: bool) -> u32 {
    let (row0, col0) = ((j % 2) * 8, (j / 2) * 8);
    let (g, t) = (lane / 4, lane % 4);
    let (low, high) = if trans {
        (tile_value(row0 + 2 * t, col0 + g), tile_value(row0 + 2 * t + 1, col0 + g))
    } else {
        (tile_value(row0 + g, col0 + 2 * t), tile_value(row0 + g, col0 + 2 * t + 1))
    };
    u32::from(T::from_f32(low).to_bits()) | u32::from(T::from_f32(high).to_bits()) << 16
}

fn run_ldmatrix<T: Half>(shift: i32) -> Vec<u32> {
    let sim = simulator();
    let tile: Vec<T> = (0..256).map(|i| T::from_f32(tile_value(i / 16, i % 16))).collect();
    let tile = sim.upload(&tile, [16, 16]).unwrap();
    let mut out = sim.zeros::<u32>([32 * 14]).unwrap();
    sim.run_source(
        &ldmatrix_source(T::CUDA),
        "ldmatrix_layout",
        &mut [Argument::input("tile", &tile), Argument::output("out", &mut out), Argument::scalar("shift", shift)],
        [1, 1, 1],
        [32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", T::CUDA));
    sim.download(&out).unwrap()
}

fn check_ldmatrix_layout<T: Half>() {
    let out = run_ldmatrix::<T>(0);
    for lane in 0..32 {
        let got = &out[lane * 14..lane * 14 + 14];
        let forms: [(&str, usize, usize, bool); 6] = [
            ("x4", 0, 4, false),
            ("x4.trans", 4, 4, true),
            ("x2", 8, 2, false),
            ("x2.trans", 10, 2, true),
            ("x1", 12, 1, false),
            ("x1.trans", 13, 1, true),
        ];
        for (form, at, count, trans) in forms {
            for j in 0..count {
                assert_eq!(
                    got[at + j],
                    expected_register::<T>(lane, j, trans),
                    "{} ldmatrix.{form}: lane {lane}, register {j}",
                    T::CUDA
                );
            }
        }
    }
}

#[test]
fn ldmatrix_hands_each_lane_the_ptx_fragment_of_a_bf16_tile_in_every_form() {
    check_ldmatrix_layout::<bf16>();
}

#[test]
fn ldmatrix_hands_each_lane_the_ptx_fragment_of_an_f16_tile_in_every_form() {
    check_ldmatrix_layout::<f16>();
}

#[test]
fn row_addresses_off_by_one_row_load_values_other_than_the_documented_layout() {
    let out = run_ldmatrix::<bf16>(1);
    let differing = (0..32)
        .flat_map(|lane| (0..4).map(move |j| (lane, j)))
        .filter(|&(lane, j)| out[lane * 14 + j] != expected_register::<bf16>(lane, j, false))
        .count();
    assert_eq!(differing, 32 * 4, "every x4 register of every lane comes from the wrong row");
}

#[test]
fn ldmatrix_of_shared_memory_no_thread_wrote_reads_the_poison_as_nan() {
    let source = r#"
extern "C" __global__ void unwritten(float* __restrict__ out)
{
    __shared__ __align__(16) __nv_bfloat16 s[8 * 8];
    const int lane = threadIdx.x;
    unsigned r[1];
    tessera_ldmatrix_x1<false>(r, &s[(lane % 8) * 8]);
    out[lane] = __bfloat162float(__ushort_as_bfloat16(r[0] & 0xffffu));
}
"#;
    let sim = simulator();
    let mut out = sim.zeros::<f32>([32]).unwrap();
    sim.run_source(source, "unwritten", &mut [Argument::output("out", &mut out)], [1, 1, 1], [32, 1, 1], TWO_ORDERS)
        .unwrap();
    assert!(sim.download(&out).unwrap().iter().all(|v| v.is_nan()));
}

#[test]
fn a_lane_may_overwrite_its_row_right_after_its_warps_ldmatrix() {
    // On the GPU ldmatrix reads for the whole warp at once: a store that follows it in any
    // lane cannot change what another lane received, under any thread order.
    let source = r#"
extern "C" __global__ void overwrite_after_load(const __nv_bfloat16* __restrict__ tile, unsigned* __restrict__ out)
{
    __shared__ __align__(16) __nv_bfloat16 s[16 * 16];
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) s[i] = tile[i];
    __syncthreads();
    __nv_bfloat16* row = &s[(lane % 16) * 16 + lane / 16 * 8];
    unsigned r[4];
    tessera_ldmatrix_x4<true>(r, row);
    for (int i = 0; i < 8; ++i) row[i] = __float2bfloat16(-1.0f);
    for (int j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}
"#;
    let sim = simulator();
    let tile: Vec<bf16> = (0..256).map(|i| bf16::from_f32(tile_value(i / 16, i % 16))).collect();
    let tile = sim.upload(&tile, [16, 16]).unwrap();
    let mut out = sim.zeros::<u32>([32 * 4]).unwrap();
    sim.run_source(
        source,
        "overwrite_after_load",
        &mut [Argument::input("tile", &tile), Argument::output("out", &mut out)],
        [1, 1, 1],
        [32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap();
    let out = sim.download(&out).unwrap();
    for lane in 0..32 {
        for j in 0..4 {
            assert_eq!(out[lane * 4 + j], expected_register::<bf16>(lane, j, true), "lane {lane}, register {j}");
        }
    }
}

// ── mma.sync ─────────────────────────────────────────────────────────────────────────────

/// One mma.m16n8k16: A 16 × 16 and B 16 × 8 (k rows, n columns) row-major in global memory,
/// C and D 16 × 8 f32. `via_ldmatrix`: the fragments come through shared memory and ldmatrix
/// (A .x4, B .x2.trans, as tessera's GEMMs load them); else each lane loads its own values at
/// the places the PTX ISA gives. `before` runs first in every lane.
fn mma_source(element: &str, as_ushort: &str, via_ldmatrix: bool, before: &str) -> String {
    let fragments = if via_ldmatrix {
        format!(
            r#"
    __shared__ __align__(16) {element} as[16 * 16];
    __shared__ __align__(16) {element} bs[16 * 8];
    for (int i = lane; i < 256; i += 32) as[i] = a[i];
    for (int i = lane; i < 128; i += 32) bs[i] = b[i];
    __syncthreads();
    tessera_ldmatrix_x4<false>(af, &as[(lane % 16) * 16 + lane / 16 * 8]);
    tessera_ldmatrix_x2<true>(bf, &bs[(lane % 16) * 8]);"#
        )
    } else {
        r#"
    af[0] = pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
    af[1] = pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
    af[2] = pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
    af[3] = pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
    bf[0] = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
    bf[1] = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);"#
            .to_string()
    };
    format!(
        r#"
__device__ unsigned pack({element} low, {element} high)
{{
    return static_cast<unsigned>({as_ushort}(low)) | static_cast<unsigned>({as_ushort}(high)) << 16;
}}

extern "C" __global__ void mma16816(const {element}* __restrict__ a, const {element}* __restrict__ b,
                                    const float* __restrict__ c, float* __restrict__ d)
{{
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    {before}
    unsigned af[4], bf[2];{fragments}
    float acc[4] = {{c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]}};
    tessera_mma_m16n8k16<{element}>(acc, af, bf);
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}}
"#
    )
}

/// The documented order: D[i][j] = fmaf chain over k from C[i][j], inputs exact in f32.
fn fmaf_chain(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            (0..k).fold(c[ij], |sum, kk| a[i * k + kk].mul_add(b[kk * n + j], sum))
        })
        .collect()
}

/// The product in f64, and each element's bound for f32 accumulation: K roundings of sums no
/// larger than Σ|a||b| + |c|.
fn f64_reference(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<(f64, f64)> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            let exact: f64 = c[ij] as f64 + (0..k).map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64).sum::<f64>();
            let magnitude: f64 =
                c[ij].abs() as f64 + (0..k).map(|kk| (a[i * k + kk] as f64 * b[kk * n + j] as f64).abs()).sum::<f64>();
            (exact, k as f64 * f32::EPSILON as f64 * magnitude)
        })
        .collect()
}

fn run_mma16816<T: Half>(via_ldmatrix: bool, before: &str, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Lcg(seed);
    let a: Vec<T> = (0..256).map(|_| T::from_f32(rng.unit() * 4.0)).collect();
    let b: Vec<T> = (0..128).map(|_| T::from_f32(rng.unit() * 4.0)).collect();
    let c: Vec<f32> = (0..128).map(|_| rng.unit() * 8.0).collect();
    let sim = simulator();
    let (ta, tb, tc) =
        (sim.upload(&a, [16, 16]).unwrap(), sim.upload(&b, [16, 8]).unwrap(), sim.upload(&c, [16, 8]).unwrap());
    let mut d = sim.filled([16, 8], f32::NAN).unwrap();
    sim.run_source(
        &mma_source(T::CUDA, T::AS_USHORT, via_ldmatrix, before),
        "mma16816",
        &mut [
            Argument::input("a", &ta),
            Argument::input("b", &tb),
            Argument::input("c", &tc),
            Argument::output("d", &mut d),
        ],
        [1, 1, 1],
        [32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", T::CUDA));
    let to_f32 = |v: &[T]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
    (to_f32(&a), to_f32(&b), c, sim.download(&d).unwrap())
}

fn check_mma16816<T: Half>(via_ldmatrix: bool, before: &str) {
    for seed in [1, 2, 3] {
        let (a, b, c, d) = run_mma16816::<T>(via_ldmatrix, before, seed);
        let chain = fmaf_chain(&a, &b, &c, 16, 8, 16);
        for (i, ((got, want), (exact, bound))) in
            d.iter().zip(&chain).zip(f64_reference(&a, &b, &c, 16, 8, 16)).enumerate()
        {
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{} seed {seed}: D[{}][{}] = {got}, the fmaf chain gives {want}",
                T::CUDA,
                i / 8,
                i % 8
            );
            assert!(
                (*got as f64 - exact).abs() <= bound,
                "{} D[{}][{}] = {got}, f64 gives {exact}",
                T::CUDA,
                i / 8,
                i % 8
            );
        }
    }
}

#[test]
fn mma_m16n8k16_bf16_computes_the_documented_fmaf_chain_from_ptx_fragments() {
    check_mma16816::<bf16>(false, "");
}

#[test]
fn mma_m16n8k16_f16_computes_the_documented_fmaf_chain_from_ptx_fragments() {
    check_mma16816::<f16>(false, "");
}

#[test]
fn ldmatrix_fragments_feed_mma_m16n8k16_as_tessera_gemms_load_them() {
    check_mma16816::<bf16>(true, "");
    check_mma16816::<f16>(true, "");
}

#[test]
fn an_mma_after_a_half_warp_shuffle_still_reads_every_lanes_registers() {
    // Lanes 0-15 have made one more warp exchange than lanes 16-31: each lane's deposit is
    // read at its own depositor's slot.
    check_mma16816::<bf16>(false, "if (lane < 16) (void)__shfl_xor_sync(0x0000ffffu, lane, 1);");
}

#[test]
fn a_full_warp_shuffle_after_a_half_warp_shuffle_reads_every_lanes_value() {
    let source = r#"
extern "C" __global__ void after_half_warp(const float* __restrict__ x, float* __restrict__ y)
{
    const int lane = threadIdx.x;
    float v = x[lane];
    if (lane < 16) v += __shfl_xor_sync(0x0000ffffu, v, 1);
    y[lane] = __shfl_xor_sync(0xffffffffu, v, 16);
}
"#;
    let sim = simulator();
    let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let tx = sim.upload(&x, [32]).unwrap();
    let mut y = sim.zeros::<f32>([32]).unwrap();
    sim.run_source(
        source,
        "after_half_warp",
        &mut [Argument::input("x", &tx), Argument::output("y", &mut y)],
        [1, 1, 1],
        [32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap();
    let v = |l: usize| if l < 16 { x[l] + x[l ^ 1] } else { x[l] };
    assert_eq!(sim.download(&y).unwrap(), (0..32).map(|l| v(l ^ 16)).collect::<Vec<_>>());
}

#[test]
fn mma_m16n8k8_tf32_ignores_the_low_13_mantissa_bits_and_computes_the_fmaf_chain() {
    let source = r#"
extern "C" __global__ void mma1688(const float* __restrict__ a, const float* __restrict__ b,
                                   const float* __restrict__ c, float* __restrict__ d)
{
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    unsigned af[4], bf[2];
    af[0] = __float_as_uint(a[g * 8 + t]);
    af[1] = __float_as_uint(a[(g + 8) * 8 + t]);
    af[2] = __float_as_uint(a[g * 8 + t + 4]);
    af[3] = __float_as_uint(a[(g + 8) * 8 + t + 4]);
    bf[0] = __float_as_uint(b[t * 8 + g]);
    bf[1] = __float_as_uint(b[(t + 4) * 8 + g]);
    float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    tessera_mma_m16n8k8_tf32(acc, af, bf);
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}
"#;
    let sim = simulator();
    let mut rng = Lcg(11);
    // full f32 inputs: their low 13 bits are set and must be ignored
    let a: Vec<f32> = (0..128).map(|_| rng.unit() * 3.0).collect();
    let b: Vec<f32> = (0..64).map(|_| rng.unit() * 3.0).collect();
    let c: Vec<f32> = (0..128).map(|_| rng.unit()).collect();
    let (ta, tb, tc) =
        (sim.upload(&a, [16, 8]).unwrap(), sim.upload(&b, [8, 8]).unwrap(), sim.upload(&c, [16, 8]).unwrap());
    let mut d = sim.filled([16, 8], f32::NAN).unwrap();
    sim.run_source(
        source,
        "mma1688",
        &mut [
            Argument::input("a", &ta),
            Argument::input("b", &tb),
            Argument::input("c", &tc),
            Argument::output("d", &mut d),
        ],
        [1, 1, 1],
        [32, 1, 1],
        THREE_ORDERS,
    )
    .unwrap();
    let d = sim.download(&d).unwrap();
    let tf32 = |v: &[f32]| v.iter().map(|x| f32::from_bits(x.to_bits() & 0xffff_e000)).collect::<Vec<f32>>();
    let (a32, b32) = (tf32(&a), tf32(&b));
    let chain = fmaf_chain(&a32, &b32, &c, 16, 8, 8);
    for (i, ((got, want), (exact, bound))) in
        d.iter().zip(&chain).zip(f64_reference(&a32, &b32, &c, 16, 8, 8)).enumerate()
    {
        assert_eq!(got.to_bits(), want.to_bits(), "D[{}][{}]", i / 8, i % 8);
        assert!((*got as f64 - exact).abs() <= bound, "D[{}][{}] = {got}, f64 gives {exact}", i / 8, i % 8);
    }
    let untruncated = fmaf_chain(&a, &b, &c, 16, 8, 8);
    assert!(d.iter().zip(&untruncated).any(|(x, y)| x != y), "the full f32 inputs would give other results");
}

// ── A warp that is not whole or not together ─────────────────────────────────────────────

const BROKEN_WARPS: &str = r#"
extern "C" __global__ void broken_warp(float* __restrict__ out, int how)
{
    __shared__ __align__(16) __nv_bfloat16 s[16 * 16];
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += blockDim.x) s[i] = __float2bfloat16(1.0f);
    __syncthreads();
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0}, r[4];
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    __align__(16) __nv_bfloat16 on_the_stack[8];
    switch (how) {
    case 0:  // lane 5 returned early, before the mma
        if (lane == 5) return;
        tessera_mma_m16n8k16<__nv_bfloat16>(acc, a, b);
        break;
    case 1:  // lane 5 returned early, before the ldmatrix
        if (lane == 5) return;
        tessera_ldmatrix_x4<false>(r, &s[(lane % 16) * 16 + lane / 16 * 8]);
        acc[0] = r[0];
        break;
    case 2:  // lane 0 shuffles while the others multiply
        if (lane == 0) acc[0] = __shfl_sync(0xffffffffu, 1.0f, 3);
        else tessera_mma_m16n8k16<__nv_bfloat16>(acc, a, b);
        break;
    case 3:  // lane 3's row address is 2 bytes off
        tessera_ldmatrix_x4<false>(r, &s[(lane % 16) * 16 + lane / 16 * 8 + (lane == 3)]);
        acc[0] = r[0];
        break;
    case 4:  // a row address outside shared memory
        tessera_ldmatrix_x4<false>(r, on_the_stack);
        acc[0] = r[0];
        break;
    default:  // every lane there, the f16 and bf16 forms mixed
        if (lane < 16) tessera_mma_m16n8k16<__half>(acc, a, b);
        else tessera_mma_m16n8k16<__nv_bfloat16>(acc, a, b);
        break;
    }
    out[lane] = acc[0];
}
"#;

fn run_broken_warp(how: i32, threads: u32) -> Result<tessera::runtime::SimulatedRun, Error> {
    let sim = simulator();
    let mut out = sim.zeros::<f32>([32]).unwrap();
    sim.run_source(
        BROKEN_WARPS,
        "broken_warp",
        &mut [Argument::output("out", &mut out), Argument::scalar("how", how)],
        [1, 1, 1],
        [threads, 1, 1],
        TWO_ORDERS,
    )
}

#[test]
fn a_lane_that_returned_before_an_mma_or_ldmatrix_is_warp_divergence_not_a_hang() {
    for (how, op) in [(0, "mma"), (1, "ldmatrix")] {
        match run_broken_warp(how, 32) {
            Err(Error::WarpDivergence { missing_thread, mask, detail, .. }) => {
                assert_eq!(missing_thread, [5, 0, 0], "{op}: {detail}");
                assert_eq!(mask, 0xffff_ffff, "{op}");
                assert!(detail.contains("has finished"), "{op}: {detail}");
            }
            other => panic!("{op}: expected warp divergence, got {other:?}"),
        }
    }
}

#[test]
fn lanes_at_different_warp_collective_instructions_are_warp_divergence() {
    for (how, wanted) in [(2, "shuffle"), (5, "mma.m16n8k16.f16")] {
        match run_broken_warp(how, 32) {
            Err(Error::WarpDivergence { detail, .. }) => {
                assert!(detail.contains(wanted) && detail.contains("same warp-collective instruction"), "{detail}")
            }
            other => panic!("expected warp divergence naming {wanted}, got {other:?}"),
        }
    }
}

#[test]
fn ldmatrix_traps_on_a_misaligned_row_or_one_outside_shared_memory() {
    for (how, wanted) in [(3, "lane 3 gave the row address"), (3, "not 16-byte aligned"), (4, "not in shared memory")] {
        match run_broken_warp(how, 32) {
            Err(Error::SimTrap { message, .. }) => assert!(message.contains(wanted), "{message}"),
            other => panic!("expected a trap saying {wanted:?}, got {other:?}"),
        }
    }
}

#[test]
fn an_mma_in_a_warp_of_fewer_than_32_threads_is_a_trap() {
    match run_broken_warp(0, 16) {
        Err(Error::SimTrap { message, .. }) => assert!(message.contains("needs all 32 lanes"), "{message}"),
        other => panic!("expected a trap, got {other:?}"),
    }
}

// ── Conversions and arithmetic ───────────────────────────────────────────────────────────

/// Each float through every conversion CUDA has, to both types and back; `same[i]` is 1 when
/// the other spellings (`__float2half`, the constructor, the pair forms) agree bit for bit.
const CONVERT: &str = r#"
extern "C" __global__ void convert(const float* __restrict__ x, __half* __restrict__ h, __nv_bfloat16* __restrict__ b,
                                   float* __restrict__ hx, float* __restrict__ bx, unsigned* __restrict__ same, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    h[i] = __float2half_rn(v);
    b[i] = __float2bfloat16_rn(v);
    hx[i] = __half2float(h[i]);
    bx[i] = __bfloat162float(b[i]);
    const unsigned short hb = __half_as_ushort(h[i]), bb = __bfloat16_as_ushort(b[i]);
    const __half2 h2 = __floats2half2_rn(v, -v);
    const __nv_bfloat162 b2 = __float22bfloat162_rn(make_float2(-v, v));
    const float2 back = __half22float2(h2);
    bool ok = __half_as_ushort(__float2half(v)) == hb && __half_as_ushort(__half(v)) == hb
           && __bfloat16_as_ushort(__float2bfloat16(v)) == bb && __bfloat16_as_ushort(__nv_bfloat16(v)) == bb
           && __half_as_ushort(h2.x) == hb && __bfloat16_as_ushort(b2.y) == bb
           && __half_as_ushort(__ushort_as_half(hb)) == hb && __bfloat16_as_ushort(__ushort_as_bfloat16(bb)) == bb
           && __float_as_uint(back.x) == __float_as_uint(hx[i])
           && __float_as_uint(__bfloat1622float2(b2).y) == __float_as_uint(bx[i])
           && __float_as_uint(static_cast<float>(h[i])) == __float_as_uint(hx[i]);
    same[i] = ok;
}
"#;

/// The values CUDA's rounding is most often got wrong on, then pseudo-random bit patterns.
fn conversion_inputs() -> Vec<f32> {
    let mut x = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),           // the smallest f32 subnormal: bf16 keeps subnormals
        f32::from_bits(0x0001_8000), // an f32 subnormal halfway between two bf16 subnormals
        65504.0,                     // f16's largest finite
        65519.996,                   // just under the f16 overflow tie: 65504
        65520.0,                     // the f16 overflow tie: even is inf
        65536.0,
        1e10,
        1.0 + 2f32.powi(-11),                         // f16 tie: to even, 1
        1.0 + 3.0 * 2f32.powi(-11),                   // f16 tie: to even, 1 + 2^-9
        1.0 + 2f32.powi(-11) + 2f32.powi(-20),        // just above the tie: up
        1.0 + 2f32.powi(-8),                          // bf16 tie: 1
        1.0 + 3.0 * 2f32.powi(-8),                    // bf16 tie: 1 + 2^-6
        2f32.powi(-24),                               // f16's smallest subnormal
        2f32.powi(-25),                               // halfway to 0: even is 0
        f32::from_bits(2f32.powi(-25).to_bits() + 1), // just above: the smallest subnormal
        3.0 * 2f32.powi(-26),                         // 0.75 of the smallest: up
        2f32.powi(-14),                               // f16's smallest normal
        2f32.powi(-14) - 2f32.powi(-25),              // rounds up from a subnormal into the normals
        6.1e-5,
        -3.0 * 2f32.powi(-25),
        3.3895314e38,                // bf16's largest finite
        f32::from_bits(0x7f7f_8000), // the bf16 overflow tie: even is inf
        f32::from_bits(0x7f7f_7fff), // just under it
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // a signalling NaN, payload in the low bits
        f32::from_bits(0xffc1_2345), // a negative quiet NaN with a payload
        f32::from_bits(0x7fbf_ffff),
    ];
    let mut rng = Lcg(5);
    x.extend((0..4000).map(|_| f32::from_bits(rng.next_u32())));
    // and values in f16's range, where most bits survive
    x.extend((0..4000).map(|_| {
        f32::from_bits(0x3300_0000 + rng.next_u32() % (0x4780_0000 - 0x3300_0000))
            * if rng.next_u32().is_multiple_of(2) { 1.0 } else { -1.0 }
    }));
    x
}

#[test]
fn float_to_half_and_bfloat16_rounds_to_nearest_even_and_canonicalises_nan_like_cuda() {
    let x = conversion_inputs();
    let n = x.len();
    let sim = simulator();
    let tx = sim.upload(&x, [n]).unwrap();
    let (mut h, mut b) = (sim.zeros::<f16>([n]).unwrap(), sim.zeros::<bf16>([n]).unwrap());
    let (mut hx, mut bx) = (sim.zeros::<f32>([n]).unwrap(), sim.zeros::<f32>([n]).unwrap());
    let mut same = sim.zeros::<u32>([n]).unwrap();
    sim.run_source(
        CONVERT,
        "convert",
        &mut [
            Argument::input("x", &tx),
            Argument::output("h", &mut h),
            Argument::output("b", &mut b),
            Argument::output("hx", &mut hx),
            Argument::output("bx", &mut bx),
            Argument::output("same", &mut same),
            Argument::scalar("n", n as i32),
        ],
        [n.div_ceil(256) as u32, 1, 1],
        [256, 1, 1],
        TWO_ORDERS,
    )
    .unwrap();
    let (h, b) = (sim.download(&h).unwrap(), sim.download(&b).unwrap());
    let (hx, bx, same) = (sim.download(&hx).unwrap(), sim.download(&bx).unwrap(), sim.download(&same).unwrap());
    for i in 0..n {
        let v = x[i];
        assert_eq!(same[i], 1, "{v:e} ({:#010x}): the other conversion spellings disagree", v.to_bits());
        if v.is_nan() {
            // CUDA (cvt.rn.f16.f32 / cvt.rn.bf16.f32, and its host code) gives the canonical NaN
            // 0x7fff whatever the sign and payload, and __half2float of it 0x7fffffff; the `half`
            // crate keeps the sign and payload instead. bfloat16 → float keeps the bits.
            assert!(f16::from_f32(v).is_nan() && bf16::from_f32(v).is_nan());
            assert_eq!((h[i].to_bits(), b[i].to_bits()), (0x7fff, 0x7fff), "NaN {:#010x}", v.to_bits());
            assert_eq!((hx[i].to_bits(), bx[i].to_bits()), (0x7fff_ffff, 0x7fff_0000), "NaN {:#010x}", v.to_bits());
            continue;
        }
        // Everywhere else CUDA and the `half` crate round alike.
        assert_eq!(h[i].to_bits(), f16::from_f32(v).to_bits(), "f16 of {v:e} ({:#010x})", v.to_bits());
        assert_eq!(b[i].to_bits(), bf16::from_f32(v).to_bits(), "bf16 of {v:e} ({:#010x})", v.to_bits());
        assert_eq!(hx[i].to_bits(), h[i].to_f32().to_bits(), "f16 back to f32, {v:e}");
        assert_eq!(bx[i].to_bits(), b[i].to_f32().to_bits(), "bf16 back to f32, {v:e}");
    }
    let at = |v: f32| x.iter().position(|&y| y.to_bits() == v.to_bits()).unwrap();
    assert_eq!(h[at(65520.0)].to_bits(), 0x7c00, "the overflow tie goes to inf");
    assert_eq!(h[at(65519.996)].to_bits(), 0x7bff);
    assert_eq!(h[at(1.0 + 2f32.powi(-11))].to_bits(), 0x3c00, "ties to even");
    assert_eq!(h[at(1.0 + 3.0 * 2f32.powi(-11))].to_bits(), 0x3c02, "ties to even");
    assert_eq!(h[at(2f32.powi(-25))].to_bits(), 0x0000);
    assert_eq!(h[at(3.0 * 2f32.powi(-26))].to_bits(), 0x0001);
    assert_eq!(b[at(f32::from_bits(0x7f7f_8000))].to_bits(), 0x7f80);
    assert_eq!(b[at(f32::from_bits(1))].to_bits(), 0x0000, "2^-149 rounds to +0");
    assert_eq!(b[at(f32::from_bits(0x0001_8000))].to_bits(), 0x0002, "a subnormal tie: to even");
}

/// Element-wise arithmetic on 16-bit values, one kernel per type.
fn arithmetic_source(element: &str, as_ushort: &str) -> String {
    format!(
        r#"
extern "C" __global__ void arithmetic(const {element}* __restrict__ x, const {element}* __restrict__ y, const {element}* __restrict__ z,
                                      unsigned* __restrict__ out, int n)
{{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const {element} a = x[i], b = y[i], c = z[i];
    unsigned short* o = reinterpret_cast<unsigned short*>(out + 4 * i);
    o[0] = {as_ushort}(__hadd(a, b));
    o[1] = {as_ushort}(a - b);
    o[2] = {as_ushort}(__hmul(a, b));
    o[3] = {as_ushort}(a / b);
    o[4] = {as_ushort}(__hfma(a, b, c));
    o[5] = {as_ushort}(__hmax(a, b));
    o[6] = {as_ushort}(-a);
    o[7] = (a < b) | (a == b) << 1 | (a != b) << 2 | __hlt(a, b) << 3 | __hgeu(a, b) << 4;
}}
"#
    )
}

/// `v` in units of 2^-24, exactly (every finite f16 is a whole number of them).
fn units24(v: f16) -> i128 {
    (v.to_f64() * 2f64.powi(24)) as i128
}

/// The f16 nearest to `num / den` · 2^-48 (`den` > 0), ties to even, ±inf past the overflow
/// tie: one correct rounding, from exact integers.
fn nearest_f16(num: i128, den: i128) -> u16 {
    let sign = if num < 0 { 0x8000u16 } else { 0 };
    let magnitude = num.abs();
    // f16 bits → value in units of 2^-48; 0x7c00 stands for 2^16, the next binade's start
    let units = |bits: u16| -> i128 {
        let (e, m) = (i128::from(bits >> 10), i128::from(bits & 0x3ff));
        if e == 0 {
            m << 24
        } else {
            (m | 0x400) << (e + 23)
        }
    };
    // the largest finite f16 at or below the value (f16 bits order like their values)
    let (mut low, mut high) = (0u16, 0x7c00u16);
    while high - low > 1 {
        let middle = (low + high) / 2;
        if units(middle) * den <= magnitude {
            low = middle;
        } else {
            high = middle;
        }
    }
    let (below, above) = (magnitude - units(low) * den, units(low + 1) * den - magnitude);
    let rounded = if below < above || (below == above && low % 2 == 0) { low } else { low + 1 };
    sign | rounded
}

#[test]
fn half_arithmetic_rounds_each_result_once_as_the_device_does() {
    let sim = simulator();
    let mut rng = Lcg(17);
    let finite = |rng: &mut Lcg| loop {
        let bits = (rng.next_u32() >> 16) as u16;
        if bits & 0x7c00 != 0x7c00 {
            return f16::from_bits(bits);
        }
    };
    let mut triples: Vec<[f16; 3]> =
        (0..3000).map(|_| [finite(&mut rng), finite(&mut rng), finite(&mut rng)]).collect();
    // near neighbours, whose sums and quotients land on and near ties
    for _ in 0..1000 {
        let a = finite(&mut rng);
        let near = f16::from_bits(a.to_bits() ^ (rng.next_u32() as u16 & 0x00ff));
        triples.push([a, near, finite(&mut rng)]);
    }
    let special = [0x0000u16, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7bff, 0x0001, 0x3c00];
    for &p in &special {
        for &q in &special {
            triples.push([f16::from_bits(p), f16::from_bits(q), f16::from_bits(0xfbff)]);
        }
    }
    let n = triples.len();
    let column = |k: usize| triples.iter().map(|t| t[k]).collect::<Vec<f16>>();
    let (x, y, z) = (
        sim.upload(&column(0), [n]).unwrap(),
        sim.upload(&column(1), [n]).unwrap(),
        sim.upload(&column(2), [n]).unwrap(),
    );
    let mut out = sim.zeros::<u32>([n * 4]).unwrap();
    sim.run_source(
        &arithmetic_source("__half", "__half_as_ushort"),
        "arithmetic",
        &mut [
            Argument::input("x", &x),
            Argument::input("y", &y),
            Argument::input("z", &z),
            Argument::output("out", &mut out),
            Argument::scalar("n", n as i32),
        ],
        [n.div_ceil(256) as u32, 1, 1],
        [256, 1, 1],
        TWO_ORDERS,
    )
    .unwrap();
    let out = sim.download(&out).unwrap();
    // Infinities, NaNs, zeros and division by zero: f64 gets them right (a NaN result is
    // CUDA's canonical 0x7fff).
    let special_case = |v: f64| if v.is_nan() { 0x7fff } else { f16::from_f64(v).to_bits() };
    for (i, [a, b, c]) in triples.iter().enumerate() {
        let halves: Vec<u16> = out[4 * i..4 * i + 4].iter().flat_map(|w| [*w as u16, (*w >> 16) as u16]).collect();
        let (fa, fb, fc) = (a.to_f64(), b.to_f64(), c.to_f64());
        let what = format!("{a} ({:#06x}), {b} ({:#06x}), {c}", a.to_bits(), b.to_bits());
        let finite = fa.is_finite() && fb.is_finite() && fc.is_finite();
        let (ua, ub, uc) = if finite { (units24(*a), units24(*b), units24(*c)) } else { (0, 0, 0) };
        let rounded = |f64_value: f64, num: i128, den: i128| {
            if !finite || f64_value == 0.0 || !f64_value.is_finite() {
                special_case(f64_value)
            } else {
                nearest_f16(num, den)
            }
        };
        assert_eq!(halves[0], rounded(fa + fb, (ua + ub) << 24, 1), "{what}: +");
        assert_eq!(halves[1], rounded(fa - fb, (ua - ub) << 24, 1), "{what}: -");
        assert_eq!(halves[2], rounded(fa * fb, ua * ub, 1), "{what}: *");
        let quotient = if ub < 0 { (-(ua << 48), -ub) } else { (ua << 48, ub) };
        assert_eq!(halves[3], rounded(fa / fb, quotient.0, quotient.1), "{what}: /");
        assert_eq!(halves[4], rounded(fa * fb + fc, ua * ub + (uc << 24), 1), "{what}: fma rounds once");
        let max = if fa.is_nan() {
            fb
        } else if fb.is_nan() || fa > fb {
            fa
        } else {
            fb
        };
        if fa != fb {
            assert_eq!(halves[5], special_case(max), "{what}: max");
        }
        assert_eq!(halves[6], if fa.is_nan() { 0x7fff } else { a.to_bits() ^ 0x8000 }, "{what}: neg");
        let compare = u16::from(fa < fb)
            | u16::from(fa == fb) << 1
            | u16::from(fa != fb) << 2
            | u16::from(fa < fb) << 3
            | u16::from(!(fa < fb)) << 4;
        assert_eq!(halves[7], compare, "{what}: comparisons");
    }
}

#[test]
fn sixteen_bit_floats_move_through_warp_shuffles_bit_for_bit() {
    let source = r#"
extern "C" __global__ void shuffle16(const __half* __restrict__ x, __half* __restrict__ y,
                                     const __nv_bfloat16* __restrict__ u, __nv_bfloat16* __restrict__ v)
{
    const int lane = threadIdx.x;
    y[lane] = __shfl_xor_sync(0xffffffffu, x[lane], 1);
    v[lane] = __shfl_down_sync(0xffffffffu, u[lane], 3);
    const __half2 pair = __shfl_sync(0xffffffffu, __halves2half2(x[lane], x[31 - lane]), 0);
    if (lane == 31) y[lane] = pair.y;
}
"#;
    let sim = simulator();
    // NaNs with payloads and signs included: a shuffle moves bits, it does not convert
    let x: Vec<f16> = (0..32u16).map(|i| f16::from_bits(0x7c01 + i * 0x0411)).collect();
    let u: Vec<bf16> = (0..32u16).map(|i| bf16::from_bits(0xff81 - i * 0x0777)).collect();
    let (tx, tu) = (sim.upload(&x, [32]).unwrap(), sim.upload(&u, [32]).unwrap());
    let (mut y, mut v) = (sim.zeros::<f16>([32]).unwrap(), sim.zeros::<bf16>([32]).unwrap());
    sim.run_source(
        source,
        "shuffle16",
        &mut [
            Argument::input("x", &tx),
            Argument::output("y", &mut y),
            Argument::input("u", &tu),
            Argument::output("v", &mut v),
        ],
        [1, 1, 1],
        [32, 1, 1],
        TWO_ORDERS,
    )
    .unwrap();
    let (y, v) = (sim.download(&y).unwrap(), sim.download(&v).unwrap());
    for lane in 0..32 {
        let want_y = if lane == 31 { x[31] } else { x[lane ^ 1] };
        assert_eq!(y[lane].to_bits(), want_y.to_bits(), "lane {lane}");
        let want_v = if lane + 3 < 32 { u[lane + 3] } else { u[lane] };
        assert_eq!(v[lane].to_bits(), want_v.to_bits(), "lane {lane}");
    }
}

#[test]
fn lanes_that_name_each_other_with_different_masks_are_warp_divergence_not_a_hang() {
    // As in CUDA, every lane a mask names must execute the op with that same mask: lanes 0-15
    // (full warp) and 16-31 (themselves and lane 0) wait for each other forever.
    let source = r#"
extern "C" __global__ void mismatched_masks(float* __restrict__ y)
{
    const int lane = threadIdx.x;
    const unsigned mask = lane < 16 ? 0xffffffffu : 0xffff0001u;
    y[lane] = __shfl_xor_sync(mask, 1.0f, 1);
}
"#;
    let sim = simulator();
    let mut y = sim.zeros::<f32>([32]).unwrap();
    match sim.run_source(
        source,
        "mismatched_masks",
        &mut [Argument::output("y", &mut y)],
        [1, 1, 1],
        [32, 1, 1],
        TWO_ORDERS,
    ) {
        Err(Error::WarpDivergence { detail, .. }) => assert!(detail.contains("same mask"), "{detail}"),
        other => panic!("expected warp divergence, got {other:?}"),
    }
}
