"""The epilogue lab's kernels, written into OUT_DIR: SGEMM V13 plain (`sgemm_v13`) and fused
with bias + GELU (`sgemm_bias_gelu`) as tessera emits them — read from tests/golden, so the lab
measures what the code generator writes today — and hand-edited variants of the fused store,
each with a host wrapper `launch_<variant>` / `prepare_<variant>` for main.cu.

    python3 variants.py /tmp/epilogue-lab
    cd /tmp/epilogue-lab && nvcc -O3 -arch=sm_90a -std=c++17 -I$OLDPWD main.cu *.cu ...  (see main.cu)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "..", "tests", "golden")


def golden(name):
    with open(os.path.join(GOLDEN, name + ".cu")) as f:
        return f.read()


def wrapper(variant, kernel, fused=True):
    args = "a, b, bias, c, alpha, M, K, N, K, N, N" if fused else "a, b, c, alpha, 0.0f, M, K, N, K, N, N"
    return f"""
// lab wrapper: launch from the harness's translation unit
void launch_{variant}(int blocks, const float* a, const float* b, const float* bias, float* c, float alpha, int M, int K, int N) {{
    {kernel}<<<blocks, 384, 148992>>>({args});
}}
void prepare_{variant}() {{ cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, 148992); }}
"""


def replace_once(text, old, new):
    assert text.count(old) >= 1, f"the emitted code changed: no `{old[:60]}..`"
    return text.replace(old, new, 1)


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
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/epilogue-lab"
    os.makedirs(out, exist_ok=True)
    for name, make in VARIANTS.items():
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(make())
    print(" ".join(VARIANTS))
