"""The norm lab's block shapes: tessera's 16-bit LayerNorm and RMSNorm kernels as emitted (read from
tests/golden), reshaped — other threads × ITEMS per block (more, smaller blocks an SM keep
more of the rows' bytes in flight) — and changed one way each: `_raw` keeps the row in registers
as the loaded 16-bit elements, `_stream` reads x around L1 and stores y evict-first, `_staged`
holds the row in shared memory instead of registers (16-byte `cp.async` copies into each
thread's own slots, so a block needs no registers for its row in flight and more blocks fit an
SM), `_bulk` the same filled by one `cp.async.bulk` of the row's whole vectors and an mbarrier,
`_chunks` and `_shuffled` build the weight's and bias' vectors from aligned 16-byte chunks where the
emitted kernel reads them by element (vector_from.cuh), `_one_pass` takes LayerNorm's statistics
from Σx and Σx² (the exact second pass where they cancel), `_loads_first` only loads the row's
vectors before summing them, `_pair` (after `_one_pass`) adds Σx and Σx² in one block reduction,
`_minN` declares N blocks an SM. Writes the sources and `shapes.inc`
(the launch table shapes.cu includes) into OUT_DIR.

    python3 shapes.py /tmp/norm-shapes [staged | widths | one_pass | pair | occupancy | parameters | early | rows_in_flight | prefetch]   (the tables of those names)
"""
import os
import re
import sys

from variants import PAIR_REDUCTION, golden, replace_once  # the emitted kernels, read from tests/golden


STREAMING = r'''
// lab: x read around L1 (no allocation: a row is read once) and y written evict-first
template <typename V>
__device__ __forceinline__ V lab_load_streaming(const void* p)
{
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return *reinterpret_cast<V*>(&r);
}
template <typename V>
__device__ __forceinline__ void lab_store_streaming(void* p, const V& v)
{
    __stcs(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&v));
}
'''


EVICT_LAST = r'''
// lab: the weight's and bias' vectors loaded to stay in L1 (every row of the grid reads them)
template <typename V>
__device__ __forceinline__ V lab_load_evict_last(const void* p)
{
    uint4 r;
    asm volatile("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return *reinterpret_cast<V*>(&r);
}
'''


def parameters_prefetched(s, names, level):
    """A prefetch of the aligned path's vectors of `names` into `level` (L1 or L2) before the
    reduction round: no register is held across it, where loading them early spills."""
    at = "    float tessera_sums_of_mean_variance[2] = {s, q};\n"
    if at not in s:  # RMSNorm: its one block sum
        at = "    const float inverse_rms ="
    lines = "".join(f'            asm volatile("prefetch.global.{level} [%0];" :: "l"({name} + head + i * VECTOR));\n' for name in names)
    prefetch = ("    #pragma unroll\n    for (int j = 0; j < ITEMS / VECTOR; ++j) {\n"
                "        const int i = j * THREADS + tid;\n"
                "        if (i < vectors) {\n" + lines + "        }\n    }\n")
    return replace_once(s, at, prefetch + at)


def parameters_evict_last(s):
    """The aligned path's weight and bias vectors loaded L1::evict_last."""
    s = replace_once(s, 'extern "C" __global__', EVICT_LAST + 'extern "C" __global__')
    for name in ("weight", "bias"):
        s = s.replace(f"tessera_vector_at<tessera_bf16x8>({name} + c)", f"lab_load_evict_last<tessera_bf16x8>({name} + c)", 1)
    return s


def parameters_early(s, names, vec):
    """The aligned path's vectors of `names` ("bias", "weight") loaded before the reduction round,
    so that their latency passes during its barriers (registers held across it)."""
    at = "    float tessera_sums_of_mean_variance[2] = {s, q};\n"
    if at not in s:  # RMSNorm: its one block sum
        at = "    const float inverse_rms ="
    loads = ""
    for name in names:
        loads += (f"    {vec} early_{name}[ITEMS / VECTOR];\n"
                  "    #pragma unroll\n    for (int j = 0; j < ITEMS / VECTOR; ++j) {\n"
                  "        const int i = j * THREADS + tid;\n"
                  f"        early_{name}[j] = {vec}{{}};\n"
                  f"        if (i < vectors && tessera_align_offset<16>({name} + head) == 0) {{\n"
                  f"            early_{name}[j] = tessera_vector_at<{vec}>({name} + head + i * VECTOR);\n"
                  "        }\n    }\n")
        s = replace_once(s, f"const {vec} {name[0]}v = tessera_vector_at<{vec}>({name} + c);",
                         f"const {vec} {name[0]}v = early_{name}[j];")
    return replace_once(s, at, loads + at)


def streaming(s):
    """x's vectors loaded without allocating in L1, y's stored evict-first (st.global.cs)."""
    s = replace_once(s, 'extern "C" __global__', STREAMING + 'extern "C" __global__')
    s = replace_once(s, "tessera_vector_at<tessera_bf16x8>(x + row * x_ld + (head + i * VECTOR))",
                     "lab_load_streaming<tessera_bf16x8>(x + row * x_ld + (head + i * VECTOR))")
    while "tessera_vector_at<tessera_bf16x8>(y + row * y_ld + c) = out;" in s:
        s = s.replace("tessera_vector_at<tessera_bf16x8>(y + row * y_ld + c) = out;",
                      "lab_store_streaming(y + row * y_ld + c, out);", 1)
    return s


STAGING = r'''
// lab: the row's vectors in shared memory, each thread's own slots (no barrier between copy and use)
__device__ __forceinline__ void lab_copy_async16(void* shared, const void* global)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(shared))), "l"(global) : "memory");
}
__device__ __forceinline__ void lab_copy_async_wait_all()
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}
// lab: the whole vectors of a row by one bulk copy, completed on an mbarrier
__device__ __forceinline__ void lab_bulk_row(void* shared, const void* global, unsigned bytes, unsigned long long* barrier, int tid)
{
    const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(barrier));
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(shared))), "l"(global), "r"(bytes), "r"(bar) : "memory");
    }
    asm volatile("{\n .reg .pred done;\n wait: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra wait;\n}" :: "r"(bar) : "memory");
}
'''


def staged(s, vec, bulk=False):
    """The row's vectors held in shared memory (`row_s`, vector i of the row at slot i) instead
    of `float v[ITEMS]`: copied there by each thread (`cp.async`) or by one bulk copy."""
    element = "__nv_bfloat16" if vec == "tessera_bf16x8" else "__half"
    s = replace_once(s, 'extern "C" __global__', STAGING + 'extern "C" __global__')
    s = replace_once(s, """    float v[ITEMS];  // [0.0f32; ITEMS]: registers, as loops over it unroll
    #pragma unroll
    for (int tessera_i = 0; tessera_i < ITEMS; ++tessera_i) { v[tessera_i] = 0.0f; }
""", f"    __shared__ __align__(16) {vec} row_s[ITEMS / VECTOR * THREADS];\n"
     + ("    __shared__ __align__(8) unsigned long long row_arrived;\n" if bulk else ""))
    load = f"            const {vec} w = tessera_vector_at<{vec}>(x + row * x_ld + (head + i * VECTOR));\n"
    i = s.index(load)
    loop_start = s.rindex("    #pragma unroll\n    for (int j = 0;", 0, i)
    loop_end = s.index("\n    }\n", i) + len("\n    }\n")
    loop = s[loop_start:loop_end]
    if bulk:
        copy = ("    lab_bulk_row(row_s, x + row * x_ld + head, static_cast<unsigned>(vectors) * 16u, &row_arrived, tid);\n")
    else:
        copy = ("    #pragma unroll\n    for (int j = 0; j < ITEMS / VECTOR; ++j) {\n        const int i = j * THREADS + tid;\n"
                "        if (i < vectors) {\n            lab_copy_async16(&row_s[i], x + row * x_ld + (head + i * VECTOR));\n"
                "        }\n    }\n    lab_copy_async_wait_all();\n")
    loop = loop.replace(load, f"            const {vec} w = row_s[i];\n")
    s = s[:loop_start] + copy + loop + s[loop_end:]
    rest_at = s.index(f"const {vec} w = row_s[i];") 
    rest_at = s.index("\n    }\n", rest_at)
    before, rest = s[:rest_at], s[rest_at:]
    before = before.replace("v[j * VECTOR + k] = static_cast<float>(reinterpret_cast<const " + element + "*>(&w)[k]);\n", "")
    before = re.sub(r"v\[j \* VECTOR \+ k\]", f"static_cast<float>(reinterpret_cast<const {element}*>(&w)[k])", before)
    rest = rest.replace("if (i < vectors) {\n", f"if (i < vectors) {{\n                const {vec} rv = row_s[i];\n")
    rest = re.sub(r"v\[j \* VECTOR \+ k\]", f"static_cast<float>(reinterpret_cast<const {element}*>(&rv)[k])", rest)
    return before + rest


def loads_first(s, vec):
    """The row's vectors loaded first (zero where the row has none), the sums then unguarded."""
    element = "__nv_bfloat16" if vec == "tessera_bf16x8" else "__half"
    load = f"            const {vec} w = tessera_vector_at<{vec}>(x + row * x_ld + (head + i * VECTOR));\n"
    i = s.index(load)
    loop_start = s.rindex("    #pragma unroll\n    for (int j = 0;", 0, i)
    loop_end = s.index("\n    }\n", i) + len("\n    }\n")
    loads = (f"    {vec} loaded[ITEMS / VECTOR];\n"
             "    #pragma unroll\n    for (int j = 0; j < ITEMS / VECTOR; ++j) {\n"
             "        const int i = j * THREADS + tid;\n"
             f"        loaded[j] = i < vectors ? tessera_vector_at<{vec}>(x + row * x_ld + (head + i * VECTOR)) : {vec}{{}};\n"
             "    }\n"
             "    #pragma unroll\n    for (int j = 0; j < ITEMS / VECTOR; ++j) {\n"
             "        #pragma unroll\n        for (int k = 0; k < VECTOR; ++k) {\n"
             f"            v[j * VECTOR + k] = static_cast<float>(reinterpret_cast<const {element}*>(&loaded[j])[k]);\n"
             "            s += v[j * VECTOR + k];\n"
             "        }\n    }\n")
    return s[:loop_start] + loads + s[loop_end:]


def one_pass(s, vec):
    """LayerNorm's statistics from one pass over the row: Σx and Σx² as it is loaded (an FFMA an
    element where the second pass took an FADD and an FFMA), var = Σx²/C − mean²; where that
    cancels (mean² > 8·var, or var ≤ 0) the exact second pass over the registers as emitted. The
    row's vectors are loaded first (`loads_first`): with the sums inside `if (i < vectors)`,
    ptxas branched around each load and its sums, so a thread's four loads ran one after another
    (SASS on sm_90a)."""
    s = loads_first(s, vec)
    s = replace_once(s, "    float s = extra;\n", "    float s = extra;\n    float q = extra * extra;\n")
    s = replace_once(s, "            s += v[j * VECTOR + k];\n",
                     "            s += v[j * VECTOR + k];\n            q = fmaf(v[j * VECTOR + k], v[j * VECTOR + k], q);\n")
    i = s.index("    const float mean = tessera_block_sum(s, tid, THREADS) / static_cast<float>(C);\n")
    i += len("    const float mean = tessera_block_sum(s, tid, THREADS) / static_cast<float>(C);\n")
    j = s.index("    const float inverse_deviation =", i)
    exact = s[i:j]
    k = s.index("\n", j)
    fast = ("    float variance = tessera_block_sum(q, tid, THREADS) / static_cast<float>(C) - mean * mean;\n"
            "    if (!(mean * mean <= 8.0f * variance)) {  // cancelled: the exact pass (uniform across the block)\n"
            + "\n".join("    " + line if line else line for line in exact.rstrip("\n").split("\n")) + "\n"
            "        variance = tessera_block_sum(squares, tid, THREADS) / static_cast<float>(C);\n"
            "    }\n"
            "    const float inverse_deviation = 1.0f / sqrtf(variance + eps);")
    return s[:i] + fast + s[k:]


def pair_reduction(s):
    """After `one_pass`: Σx and Σx² added over the block in one reduction of the pair (one round
    of barriers where two block sums take two)."""
    s = replace_once(s, 'extern "C" __global__', PAIR_REDUCTION + 'extern "C" __global__')
    s = replace_once(s, """    const float mean = tessera_block_sum(s, tid, THREADS) / static_cast<float>(C);
    float variance = tessera_block_sum(q, tid, THREADS) / static_cast<float>(C) - mean * mean;
""", """    const float2 sums = lab_block_sum_pair(s, q, tid, THREADS);
    const float mean = sums.x / static_cast<float>(C);
    float variance = sums.y / static_cast<float>(C) - mean * mean;
""")
    return s


def vectors_from_chunks(s, bias, shuffled=False):
    """The by-element weight (and bias) reads of the path where y starts as x does made vectors
    built from two aligned 16-byte chunks (vector_from.cuh)."""
    s = replace_once(s, 'extern "C" __global__', '#include "vector_from.cuh"\nextern "C" __global__')
    i = s.index("        if (tessera_align_offset<16>(y + row * y_ld) == head) {")
    j = s.index("const int c = head + i * VECTOR;", i) + len("const int c = head + i * VECTOR;")
    loads = "\n                    const tessera_bf16x8 wv = lab_vector_from<tessera_bf16x8>(weight + c, weight, weight + C);"
    if bias:
        loads += "\n                    const tessera_bf16x8 bv = lab_vector_from<tessera_bf16x8>(bias + c, bias, bias + C);"
    k = s.index("y + row * y_ld + c", j)
    body = s[j:k].replace("weight[c + k]", "reinterpret_cast<const __nv_bfloat16*>(&wv)[k]")
    body = body.replace("bias[c + k]", "reinterpret_cast<const __nv_bfloat16*>(&bv)[k]")
    if shuffled:
        loads = loads.replace("lab_vector_from<tessera_bf16x8>(weight + c, weight, weight + C)",
                              "lab_vector_shuffled<tessera_bf16x8>(weight + c, weight + C)")
        loads = loads.replace("lab_vector_from<tessera_bf16x8>(bias + c, bias, bias + C)",
                              "lab_vector_shuffled<tessera_bf16x8>(bias + c, bias + C)")
    return s[:j] + loads + body + s[k:]


def shaped(kernel, threads, items, changes=()):
    """The emitted `kernel` at threads × items, with `changes` (any of "raw", "stream",
    "staged", "bulk", "chunks", "shuffled", "one_pass", "loads_first", "pair", "minN", "evict_last",
    "no_bias", "bias_early", "parameters_early", "prefetch_L1", "prefetch_L2") made to it; its name says them. `items` is a
    multiple of the 16-bit vector of 8: the kernels' loops take ITEMS / VECTOR vectors a thread,
    so any other count holds fewer columns than threads × items says."""
    assert items % 8 == 0, f"{kernel} at {threads} × {items}: ITEMS must be a multiple of 8"
    raw, stream, chunks, shuffled = ("raw" in changes, "stream" in changes, "chunks" in changes, "shuffled" in changes)
    vec = "tessera_f16x8" if kernel.endswith("_f16") else "tessera_bf16x8"
    s = golden(kernel)
    old_threads = int(s.split("constexpr int THREADS = ")[1].split(";")[0])
    old_items = int(s.split("constexpr int ITEMS = ")[1].split(";")[0])
    name = f"{kernel}_{threads}x{items}" + "".join("_" + change for change in changes)
    s = replace_once(s, kernel + "(", name + "(")
    # the emitted blocks-per-SM bound belongs to the emitted shape ("minN" sets one for another)
    if (threads, items) != (old_threads, old_items):
        s = re.sub(rf"__launch_bounds__\({old_threads}(, \d+)?\)", f"__launch_bounds__({threads})", s)
    s = replace_once(s, f"constexpr int THREADS = {old_threads};", f"constexpr int THREADS = {threads};")
    s = replace_once(s, f"constexpr int ITEMS = {old_items};", f"constexpr int ITEMS = {items};")
    if raw:
        s = replace_once(s, "    float v[ITEMS];", "    __nv_bfloat16 v[ITEMS];")
        s = replace_once(s, "v[tessera_i] = 0.0f;", "v[tessera_i] = __float2bfloat16_rn(0.0f);")
        load = "reinterpret_cast<const __nv_bfloat16*>(&w)[k];"
        if load not in s:  # the one-pass kernels' loads (thirty-eighth session)
            load = "reinterpret_cast<__nv_bfloat16*>(&w)[k];"
        s = replace_once(s, "v[j * VECTOR + k] = static_cast<float>(" + load[:-1] + ");", "v[j * VECTOR + k] = " + load)
        head, rest = s.split(load, 1)
        s = head + load + rest.replace("v[j * VECTOR + k]", "static_cast<float>(v[j * VECTOR + k])")
    if "one_pass" in changes:
        s = one_pass(s, vec)
    if "loads_first" in changes:
        s = loads_first(s, vec)
    if "pair" in changes:
        s = pair_reduction(s)
    for change in changes:  # "minN": __launch_bounds__(threads, N), N blocks an SM (replacing any)
        if change.startswith("min"):
            s = re.sub(r"__launch_bounds__\(\d+(, \d+)?\)", f"__launch_bounds__({threads}, {int(change[3:])})", s)
    if "staged" in changes or "bulk" in changes:
        s = staged(s, vec, bulk="bulk" in changes)
    if stream:
        s = streaming(s)
    if "bias_early" in changes:
        s = parameters_early(s, ["bias"], vec)
    if "parameters_early" in changes:
        s = parameters_early(s, ["bias", "weight"] if kernel.startswith("layer") else ["weight"], vec)
    if "evict_last" in changes:
        s = parameters_evict_last(s)
    for level in ("L1", "L2"):
        if f"prefetch_{level}" in changes:
            s = parameters_prefetched(s, ["weight", "bias"] if kernel.startswith("layer") else ["weight"], level)
    if "no_bias" in changes:  # timing only: the aligned path's bias vectors not loaded (outputs differ)
        s = replace_once(s, "const tessera_bf16x8 bv = tessera_vector_at<tessera_bf16x8>(bias + c);", "const tessera_bf16x8 bv = wv;")
    if chunks or shuffled:
        s = vectors_from_chunks(s, bias=kernel.startswith("layer"), shuffled=shuffled)
    return name, s


# (kernel, is LayerNorm, threads, items, changes); the first of each norm is its emitted shape, the
# reference the others' outputs are compared with. The session of 2026-11-27 also ran: 256 × 24
# raw, 128 × 40 (raw), 64 × 80 for the short LayerNorm; 128 × 64 and 512 × 16 for the 8192-column
# norms; "stream" on both 8192-column norms; LayerNorm's fma form (emitted since 1007c79); the
# session of 2026-11-28 (thirty-sixth) added "staged" and "bulk".
STAGED = [
    ("layer_norm_short_bf16", True, 128, 40, ()),
    ("layer_norm_short_bf16", True, 128, 40, ("staged",)),
    ("layer_norm_short_bf16", True, 256, 24, ("staged",)),
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("staged",)),
    ("layer_norm_bf16", True, 256, 32, ("bulk",)),
    ("layer_norm_bf16", True, 512, 16, ("staged",)),
    ("layer_norm_bf16", True, 128, 64, ("staged",)),
    ("rms_norm_short_bf16", False, 128, 40, ()),
    ("rms_norm_short_bf16", False, 128, 40, ("staged",)),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 256, 32, ("staged",)),
    ("rms_norm_bf16", False, 256, 32, ("bulk",)),
    ("rms_norm_bf16", False, 512, 16, ("staged",)),
]

# 16-bit rows of 5121–8192 columns (6144, 7168: hidden sizes of real models), which the
# 8192-column kernels (256 × 32) hold with a quarter or an eighth of their registers idle:
# blocks shaped to the row instead (the session of 2026-11-28).
WIDTHS = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("staged",)),
    ("layer_norm_bf16", True, 192, 32, ()),
    ("layer_norm_bf16", True, 128, 48, ()),
    ("layer_norm_bf16", True, 224, 32, ()),
    ("layer_norm_bf16", True, 128, 56, ()),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 192, 32, ()),
    ("rms_norm_bf16", False, 128, 48, ()),
    ("rms_norm_bf16", False, 224, 32, ()),
    ("rms_norm_bf16", False, 128, 56, ()),
]

# LayerNorm's statistics in one pass (ncu at 8192², H200: the 16-bit LayerNorm issues an
# instruction 73% of cycles, RMSNorm 56%): the session of 2026-11-28 (thirty-seventh).
ONE_PASS = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("loads_first",)),
    ("layer_norm_bf16", True, 256, 32, ("one_pass",)),
    ("layer_norm_bf16", True, 256, 32, ("one_pass", "min4")),
    ("layer_norm_bf16", True, 128, 48, ()),
    ("layer_norm_bf16", True, 128, 48, ("one_pass",)),
    ("layer_norm_bf16", True, 128, 48, ("one_pass", "min6")),
    ("layer_norm_short_bf16", True, 128, 40, ()),
    ("layer_norm_short_bf16", True, 128, 40, ("one_pass",)),
    ("rms_norm_bf16", False, 256, 32, ()),
]

# .. and their Σx and Σx² in one block reduction (the session of 2026-11-28, thirty-seventh)
PAIR = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("one_pass", "min4")),
    ("layer_norm_bf16", True, 256, 32, ("one_pass", "pair", "min4")),
    ("layer_norm_bf16", True, 256, 32, ("one_pass", "pair")),
    ("layer_norm_bf16", True, 128, 48, ()),
    ("layer_norm_bf16", True, 128, 48, ("one_pass", "pair", "min6")),
    ("layer_norm_short_bf16", True, 128, 40, ()),
    ("layer_norm_short_bf16", True, 128, 40, ("one_pass", "pair")),
    ("rms_norm_bf16", False, 256, 32, ()),
]

# The emitted one-pass LayerNorm (thirty-eighth session: 4 blocks an SM, 64 registers) at 5
# blocks an SM, as RMSNorm runs (48 registers; ptxas spills 60 bytes to fit LayerNorm there)
OCCUPANCY = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("min5",)),
    ("layer_norm_bf16", True, 256, 32, ("min3",)),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 256, 32, ("min4",)),
]

# What LayerNorm's bias costs over RMSNorm at 8192 columns: its loads left out (timing only), and
# the weight's and bias' loads kept in L1 (the thirty-eighth session)
PARAMETERS = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("no_bias",)),
    ("layer_norm_bf16", True, 256, 32, ("evict_last",)),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 256, 32, ("evict_last",)),
]

# The parameters' loads before the reduction round, their latency in its barriers (thirty-eighth
# session)
EARLY = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("bias_early",)),
    ("layer_norm_bf16", True, 256, 32, ("parameters_early",)),
    ("layer_norm_bf16", True, 256, 32, ("parameters_early", "min3")),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 256, 32, ("parameters_early",)),
]

# 8192-column rows in blocks of 128 × 64 (more rows in flight an SM than 4 blocks of 256 × 32
# if 5 or 6 fit), one round (thirty-eighth session)
ROWS_IN_FLIGHT = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 128, 64, ()),
    ("layer_norm_bf16", True, 128, 64, ("min5",)),
    ("layer_norm_bf16", True, 128, 64, ("min6",)),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 128, 64, ()),
]

# The parameters prefetched into L1 or L2 before the reduction round (no registers held across it;
# the row held as its 16-bit elements with the parameters loaded early spills 396 bytes), and the
# row held as its 16-bit elements (thirty-ninth session)
PREFETCH = [
    ("layer_norm_bf16", True, 256, 32, ()),
    ("layer_norm_bf16", True, 256, 32, ("prefetch_L1",)),
    ("layer_norm_bf16", True, 256, 32, ("prefetch_L2",)),
    ("layer_norm_bf16", True, 256, 32, ("raw",)),
    ("layer_norm_bf16", True, 256, 32, ("no_bias",)),
    ("rms_norm_bf16", False, 256, 32, ()),
    ("rms_norm_bf16", False, 256, 32, ("prefetch_L1",)),
]

TABLES = {"staged": STAGED, "widths": WIDTHS, "one_pass": ONE_PASS, "pair": PAIR, "occupancy": OCCUPANCY, "parameters": PARAMETERS, "early": EARLY, "rows_in_flight": ROWS_IN_FLIGHT, "prefetch": PREFETCH}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/norm-shapes"
    shapes = TABLES[sys.argv[2] if len(sys.argv) > 2 else "staged"]
    os.makedirs(out, exist_ok=True)
    table = []
    for kernel, layer, threads, items, changes in shapes:
        name, source = shaped(kernel, threads, items, changes)
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(source)
        table.append((name, layer, threads, items))
    with open(os.path.join(out, "shapes.inc"), "w") as f:
        for name, layer, threads, items in table:
            params = "const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*" if layer \
                else "const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*"
            f.write(f'extern "C" __global__ void {name}({params}, float, int, int, int, int);\n')
        f.write("static const Shape SHAPES[] = {\n")
        for name, layer, threads, items in table:
            f.write(f'    {{"{name}", {"true" if layer else "false"}, {threads}, {threads * items}, (const void*){name}}},\n')
        f.write("};\n")
    print(" ".join(name for name, *_ in table))
