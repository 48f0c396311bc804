"""The norm lab's kernels, written into OUT_DIR: `layer_norm_short_bf16`, `rms_norm_short_bf16`
and `layer_norm_short_f32` as tessera emits them (read from tests/golden), and variants:
`<kernel>_from` reads the weight and bias as vectors built from two aligned 16-byte chunks
(vector_from.cuh) where the emitted kernel reads them by element; `layer_norm_short_bf16_pair`
takes the mean and variance from one block reduction of (Σd, Σd²), d = x − x[row, 0].

    python3 variants.py /tmp/norm-lab
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden import golden, replace_once  # noqa: E402  (tests/golden, benchmarks/lab/golden.py)


def vector_from(kernel, vec, bias):
    s = replace_once(golden(kernel), kernel + "(", kernel + "_from(")
    s = replace_once(s, 'extern "C" __global__', '#include "vector_from.cuh"\nextern "C" __global__')
    # the path where y starts as x does and weight and bias are read by element
    i = s.index("    } else {\n        if (tessera_align_offset<16>(y + row * y_ld) == head) {")
    j = s.index("const int c = head + i * VECTOR;", i) + len("const int c = head + i * VECTOR;")
    loads = f"\n                    const {vec} wv = lab_vector_from<{vec}>(weight + c, weight, weight + C);"
    if bias:
        loads += f"\n                    const {vec} bv = lab_vector_from<{vec}>(bias + c, bias, bias + C);"
    s = s[:j] + loads + s[j:]
    k = s.index("tessera_vector_at<", j)
    element = "float" if vec == "float4" else "__nv_bfloat16"
    body = s[j:k].replace("weight[c + k]", f"reinterpret_cast<const {element}*>(&wv)[k]")
    body = body.replace("bias[c + k]", f"reinterpret_cast<const {element}*>(&bv)[k]")
    return s[:j] + body + s[k:]


PAIR_REDUCTION = r'''
// lab: (Σa, Σb) over the block in one reduction: warp butterflies on both, one round through shared memory
__device__ __forceinline__ float2 lab_block_sum_pair(float a, float b, int tid, int threads)
{
    __shared__ float2 warp_sums[32];
    #pragma unroll
    for (int o = 16; o > 0; o /= 2) { a += __shfl_xor_sync(0xffffffff, a, o); b += __shfl_xor_sync(0xffffffff, b, o); }
    if (tid % 32 == 0) warp_sums[tid / 32] = make_float2(a, b);
    __syncthreads();
    float2 w = tid % 32 < (threads + 31) / 32 ? warp_sums[tid % 32] : make_float2(0.0f, 0.0f);
    #pragma unroll
    for (int o = 16; o > 0; o /= 2) { w.x += __shfl_xor_sync(0xffffffff, w.x, o); w.y += __shfl_xor_sync(0xffffffff, w.y, o); }
    __syncthreads();
    return w;
}
'''


def pair():
    s = replace_once(golden("layer_norm_short_bf16"), "layer_norm_short_bf16(", "layer_norm_short_bf16_pair(")
    s = replace_once(s, 'extern "C" __global__', PAIR_REDUCTION + 'extern "C" __global__')
    # shift: the row's first element (every thread's load of it an L1 hit)
    s = replace_once(s, "    float v[ITEMS];", "    const float shift = static_cast<float>(x[row * x_ld]);\n    float v[ITEMS];")
    s = replace_once(s, "    float s = extra;\n", "    float s = extra_column >= 0 ? extra - shift : 0.0f;\n    float q = s * s;\n")
    s = replace_once(s, "                s += v[j * VECTOR + k];\n",
                     "                const float d = v[j * VECTOR + k] - shift;\n                s += d;\n                q += d * d;\n")
    i = s.index("    const float mean = tessera_block_sum(s, tid, THREADS) / static_cast<float>(C);")
    j = s.index("    const float inverse_deviation =", i)
    k = s.index("\n", j)
    return s[:i] + """    const float2 sums = lab_block_sum_pair(s, q, tid, THREADS);
    const float mean = shift + sums.x / static_cast<float>(C);
    const float variance = fmaxf(sums.y / static_cast<float>(C) - (sums.x / static_cast<float>(C)) * (sums.x / static_cast<float>(C)), 0.0f);
    const float inverse_deviation = 1.0f / sqrtf(variance + eps);""" + s[k:]


SOURCES = {
    "layer_norm_short_bf16": lambda: golden("layer_norm_short_bf16"),
    "layer_norm_short_bf16_from": lambda: vector_from("layer_norm_short_bf16", "tessera_bf16x8", bias=True),
    "layer_norm_short_bf16_pair": pair,
    "rms_norm_short_bf16": lambda: golden("rms_norm_short_bf16"),
    "rms_norm_short_bf16_from": lambda: vector_from("rms_norm_short_bf16", "tessera_bf16x8", bias=False),
    "layer_norm_short_f32": lambda: golden("layer_norm_short_f32"),
    "layer_norm_short_f32_from": lambda: vector_from("layer_norm_short_f32", "float4", bias=True),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/norm-lab"
    os.makedirs(out, exist_ok=True)
    for name, make in SOURCES.items():
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(make())
    print(" ".join(SOURCES))
