"""The epilogue lab's kernels, written into OUT_DIR: SGEMM V13 plain (`sgemm_v13`) and fused
with bias + GELU (`sgemm_bias_gelu`) as tessera emits them — read from tests/golden, so the lab
measures what the code generator writes today — and hand-edited variants of the fused store,
each with a host wrapper `launch_<variant>` / `prepare_<variant>` for main.cu.

    python3 variants.py /tmp/epilogue-lab
    cd /tmp/epilogue-lab && nvcc -O3 -arch=sm_90a -std=c++17 -I$OLDPWD main.cu *.cu ...  (see main.cu)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden import golden, replace_once  # noqa: E402  (tests/golden, benchmarks/lab/golden.py)


def wrapper(variant, kernel, fused=True):
    args = "a, b, bias, c, alpha, M, K, N, K, N, N" if fused else "a, b, c, alpha, 0.0f, M, K, N, K, N, N"
    return f"""
// lab wrapper: launch from the harness's translation unit
void launch_{variant}(int blocks, const float* a, const float* b, const float* bias, float* c, float alpha, int M, int K, int N) {{
    {kernel}<<<blocks, 384, 148992>>>({args});
}}
void prepare_{variant}() {{ cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, 148992); }}
"""


FUSED = golden("sgemm_bias_gelu")
MAP = "return tessera_gelu(alpha * v + bias[col]); };"
STORE = [l for l in FUSED.split("\n") if "float4 value = make_float4(element_map(acc[i][j]" in l][0]
INDENT = STORE[: len(STORE) - len(STORE.lstrip())]
ROWS_START = "                #pragma unroll\n                for (int i = 0; i < TM; ++i) {\n                    const int row = i / (TM / 2) * (BM / 2)"
ROWS_END = "            }\n        }\n    }\n}"


def fused(variant, edit=lambda s: s, helpers=""):
    kernel = "epilogue_" + variant
    s = replace_once(FUSED, "sgemm_bias_gelu(", kernel + "(")
    if helpers:
        s = replace_once(s, 'extern "C" __global__', helpers + 'extern "C" __global__')
    return edit(s) + wrapper(variant, kernel)


def hoisted(s):
    # the thread's 8 columns' bias loaded once per tile, before the rows
    s = replace_once(s, "#pragma unroll\n                for (int i = 0; i < TM; ++i) {",
        "float bias_cols[TN];\n                #pragma unroll\n                for (int j = 0; j < TN; j += VECTOR) {\n"
        "                    const int col = j / (TN / 2) * (BN / 2) + thread_col * (TN / 2) + j % (TN / 2);\n"
        "                    if (whole_tile) *reinterpret_cast<float4*>(&bias_cols[j]) = *reinterpret_cast<const float4*>(&bias[c_col0 + col]);\n"
        "                }\n                #pragma unroll\n                for (int i = 0; i < TM; ++i) {")
    store = STORE
    for k in (3, 2, 1, 0):
        at = f"acc[i][j + {k}], c_row0 + row, c_col0 + col + {k})" if k else "acc[i][j], c_row0 + row, c_col0 + col)"
        into = f"tessera_gelu(alpha * acc[i][j + {k}] + bias_cols[j + {k}])" if k else "tessera_gelu(alpha * acc[i][j] + bias_cols[j])"
        store = store.replace("element_map(" + at, into)
    return replace_once(s, STORE, store)


def unswitched_rows(s):
    # the whole-tile test out of the loops; a row's 8 values mapped in place, then stored
    body = """                if (whole_tile) {
                    #pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        const int row = i / (TM / 2) * (BM / 2) + thread_row * (TM / 2) + i % (TM / 2);
                        #pragma unroll
                        for (int j = 0; j < TN; ++j) {
                            const int col = j / (TN / 2) * (BN / 2) + thread_col * (TN / 2) + j % (TN / 2);
                            acc[i][j] = element_map(acc[i][j], c_row0 + row, c_col0 + col);
                        }
                        #pragma unroll
                        for (int j = 0; j < TN; j += VECTOR) {
                            const int col = j / (TN / 2) * (BN / 2) + thread_col * (TN / 2) + j % (TN / 2);
                            *reinterpret_cast<float4*>(&c[(c_row0 + row) * c_ld + c_col0 + col]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                        }
                    }
                } else {
                    #pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        const int row = i / (TM / 2) * (BM / 2) + thread_row * (TM / 2) + i % (TM / 2);
                        #pragma unroll
                        for (int j = 0; j < TN; ++j) {
                            const int col = j / (TN / 2) * (BN / 2) + thread_col * (TN / 2) + j % (TN / 2);
                            if (c_row0 + row < M && c_col0 + col < N) c[(c_row0 + row) * c_ld + c_col0 + col] = element_map(acc[i][j], c_row0 + row, c_col0 + col);
                        }
                    }
                }
"""
    start = s.index(ROWS_START)
    end = s.index(ROWS_END, start)
    return s[:start] + body + s[end:]


def lockstep(s):
    s = replace_once(s, MAP, "return lab_gelu(alpha * v + bias[col]); };")
    return replace_once(s, STORE, INDENT + "float4 value = lab_gelu4(make_float4(alpha * acc[i][j] + bias[c_col0 + col], "
        "alpha * acc[i][j + 1] + bias[c_col0 + col + 1], alpha * acc[i][j + 2] + bias[c_col0 + col + 2], "
        "alpha * acc[i][j + 3] + bias[c_col0 + col + 3]));")


# the GELU pass over the stored tile at (p_row0, p_col0), by producer p (indented for a function body)
PASS_LOOP = """    if (M - p_row0 >= BM && N - p_col0 >= BN) {
        #pragma unroll 1
        for (int r0 = p / (BN / 4); r0 < BM; r0 += BATCH * (PRODUCERS / (BN / 4))) {
            float4 v[BATCH];
            #pragma unroll
            for (int u = 0; u < BATCH; ++u)
                v[u] = *reinterpret_cast<const float4*>(&c[(p_row0 + r0 + u * (PRODUCERS / (BN / 4))) * c_ld + p_col0 + p % (BN / 4) * 4]);
            #pragma unroll
            for (int u = 0; u < BATCH; ++u) {
                v[u] = make_float4(tessera_gelu(v[u].x), tessera_gelu(v[u].y), tessera_gelu(v[u].z), tessera_gelu(v[u].w));
                *reinterpret_cast<float4*>(&c[(p_row0 + r0 + u * (PRODUCERS / (BN / 4))) * c_ld + p_col0 + p % (BN / 4) * 4]) = v[u];
            }
        }
    } else {
        for (int e = p; e < BM * BN; e += PRODUCERS) {
            const int row = p_row0 + e / BN, col = p_col0 + e % BN;
            if (row < M && col < N) c[row * c_ld + col] = tessera_gelu(c[row * c_ld + col]);
        }
    }
"""

PASS_FUNCTION = """
// lab: the GELU pass over a stored tile, out of line so that the producers' k loop stays small
template <int BM, int BN, int PRODUCERS, int BATCH>
__device__ __noinline__ void lab_gelu_pass(float* __restrict__ c, const int M, const int N, const int c_ld, const int p_row0, const int p_col0, const int p)
{
""" + PASS_LOOP + "}\n"

PASS_CALL = """
                    // lab: the previous tile's GELU, by the producers, once the next tile's ring is full
                    if (pending >= 0 && k == (k_tiles > STAGES ? STAGES : k_tiles - 1)) {
                        tessera_mbarrier_wait(&tessera_stored, passes & 1);
                        ++passes;
                        PASS_BODY
                    }"""

# the pass written in the producers' k loop
PASS = PASS_CALL.replace("PASS_BODY", "const int p_row0 = pending / tiles_x * BM;\n"
                         "                        const int p_col0 = pending % tiles_x * BN;\n"
                         "                        const int p = threadIdx.x - THREADS;\n"
                         + "".join("                    " + line + "\n" for line in PASS_LOOP.rstrip("\n").split("\n")).rstrip("\n"))


def by_producers(batch, mode="inline"):
    def edit(s):
        if mode == "noinline":
            s = replace_once(s, 'extern "C" __global__', PASS_FUNCTION + 'extern "C" __global__')
        pass_code = {"inline": PASS,
                     "noinline": PASS_CALL.replace("PASS_BODY", "lab_gelu_pass<BM, BN, PRODUCERS, BATCH>(c, M, N, c_ld, pending / tiles_x * BM, pending % tiles_x * BN, threadIdx.x - THREADS);"),
                     "none": PASS_CALL.replace("PASS_BODY", "")}[mode]
        s = replace_once(s, "__shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];",
                         "__shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];\n        __shared__ tessera_mbarrier tessera_stored;")
        s = replace_once(s, "            tessera_mbarrier_init_fence();",
                         "            tessera_mbarrier_init(&tessera_stored, THREADS);\n            tessera_mbarrier_init_fence();")
        s = replace_once(s, "            int filled = 0;",
                         f"            constexpr int BATCH = {batch};\n            int pending = -1, passes = 0;\n            int filled = 0;")
        s = replace_once(s, "                    tessera_async_arrive_on(&tessera_full[stage]);\n                }",
                         "                    tessera_async_arrive_on(&tessera_full[stage]);" + pass_code + "\n                }\n                pending = tile;")
        start = s.index("            // copy(&acc, c.tile([by, bx], [BM, BN])).map(")
        end = s.index(ROWS_END, start) + len("            }\n")
        block = s[start:end]
        linear = replace_once(block, MAP, "return alpha * v + bias[col]; };")
        both = ("            if (tile + gridDim.x >= tiles) {  // lab: the last tile: GELU here\n" + block
                + "            } else {  // lab: α·v + bias here, the GELU by the producers during the next tile\n" + linear
                + "            __syncwarp();\n            tessera_mbarrier_arrive(&tessera_stored);\n            }\n")
        return s[:start] + both + s[end:]
    return edit


VARIANTS = {
    "plain": lambda: golden("sgemm_v13") + wrapper("plain", "sgemm_v13", fused=False),
    "emitted": lambda: fused("emitted"),
    # the bias added, no GELU
    "no_gelu": lambda: fused("no_gelu", lambda s: replace_once(s, MAP, "return alpha * v + bias[col]; };")),
    "hoisted": lambda: fused("hoisted", hoisted),
    "unswitched_rows": lambda: fused("unswitched_rows", unswitched_rows),
    # an erf of our own, value by value, and four values in step
    "own_erf": lambda: fused("own_erf", lambda s: replace_once(s, MAP, "return lab_gelu(alpha * v + bias[col]); };"),
                             '#include "erf_lab.cuh"\n'),
    "lockstep": lambda: fused("lockstep", lockstep, '#include "erf_lab.cuh"\n'),
    # α·v + bias stored by the compute threads; the GELU applied in place by the producer
    # warpgroup while the next tile's k loop runs (the block's last tile as emitted)
    "by_producers": lambda: fused("by_producers", by_producers(4)),
    "by_producers_2": lambda: fused("by_producers_2", by_producers(2)),
    # the pass out of line; no pass at all (wrong values: the time of the rest)
    "by_producers_call": lambda: fused("by_producers_call", by_producers(4, "noinline")),
    "by_producers_nopass": lambda: fused("by_producers_nopass", by_producers(4, "none")),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/epilogue-lab"
    os.makedirs(out, exist_ok=True)
    for name, make in VARIANTS.items():
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(make())
    print(" ".join(VARIANTS))
