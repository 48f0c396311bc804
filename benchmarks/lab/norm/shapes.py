"""The norm lab's block shapes: tessera's 16-bit LayerNorm and RMSNorm kernels as emitted (read from
tests/golden) and reshaped — other threads × ITEMS per block (more, smaller blocks an SM keep
more of the rows' bytes in flight), and `_raw` forms that keep the row in registers as the loaded
16-bit elements, converted where used. Writes the sources and `shapes.inc` (the launch table
shapes.cu includes) into OUT_DIR.

    python3 shapes.py /tmp/norm-shapes
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "..", "tests", "golden")


def golden(name):
    with open(os.path.join(GOLDEN, name + ".cu")) as f:
        return f.read()


def replace_once(text, old, new):
    assert text.count(old) >= 1, f"the emitted code changed: no `{old[:60]}..`"
    return text.replace(old, new, 1)


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


def streaming(s):
    """x's vectors loaded without allocating in L1, y's stored evict-first (st.global.cs)."""
    s = replace_once(s, 'extern "C" __global__', STREAMING + 'extern "C" __global__')
    s = replace_once(s, "tessera_vector_at<tessera_bf16x8>(x + row * x_ld + (head + i * VECTOR))",
                     "lab_load_streaming<tessera_bf16x8>(x + row * x_ld + (head + i * VECTOR))")
    while "tessera_vector_at<tessera_bf16x8>(y + row * y_ld + c) = out;" in s:
        s = s.replace("tessera_vector_at<tessera_bf16x8>(y + row * y_ld + c) = out;",
                      "lab_store_streaming(y + row * y_ld + c, out);", 1)
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


def fused(s):
    """LayerNorm's (x − mean)·inverse_deviation·w + b as fma(fma(x, inverse_deviation, shift), w, b),
    shift = −mean·inverse_deviation: two FMAs an element where it takes FADD, FMUL, FFMA."""
    line = s.index("    const float inverse_deviation =")
    end = s.index("\n", line) + 1
    s = s[:end] + "    const float lab_shift = -mean * inverse_deviation;\n" + s[end:]
    old = "(v[j * VECTOR + k] - mean) * inverse_deviation * "
    assert old in s
    return s.replace(old, "fmaf(v[j * VECTOR + k], inverse_deviation, lab_shift) * ")


def shaped(kernel, threads, items, raw=False, stream=False, chunks=False, shuffled=False, fma=False):
    s = golden(kernel)
    old_threads = int(s.split("constexpr int THREADS = ")[1].split(";")[0])
    old_items = int(s.split("constexpr int ITEMS = ")[1].split(";")[0])
    name = f"{kernel}_{threads}x{items}" + ("_raw" if raw else "") + ("_stream" if stream else "") + ("_chunks" if chunks else "") + ("_shuffled" if shuffled else "") + ("_fma" if fma else "")
    s = replace_once(s, kernel + "(", name + "(")
    s = s.replace(f"__launch_bounds__({old_threads})", f"__launch_bounds__({threads})")
    s = replace_once(s, f"constexpr int THREADS = {old_threads};", f"constexpr int THREADS = {threads};")
    s = replace_once(s, f"constexpr int ITEMS = {old_items};", f"constexpr int ITEMS = {items};")
    if raw:
        s = replace_once(s, "    float v[ITEMS];", "    __nv_bfloat16 v[ITEMS];")
        s = replace_once(s, "v[tessera_i] = 0.0f;", "v[tessera_i] = __float2bfloat16_rn(0.0f);")
        load = "reinterpret_cast<const __nv_bfloat16*>(&w)[k];"
        s = replace_once(s, "v[j * VECTOR + k] = static_cast<float>(" + load[:-1] + ");", "v[j * VECTOR + k] = " + load)
        head, rest = s.split(load, 1)
        s = head + load + rest.replace("v[j * VECTOR + k]", "static_cast<float>(v[j * VECTOR + k])")
    if stream:
        s = streaming(s)
    if fma:
        s = fused(s)
    if chunks or shuffled:
        s = vectors_from_chunks(s, bias=kernel.startswith("layer"), shuffled=shuffled)
    return name, s


# (kernel, is LayerNorm, threads, items, raw[, stream, chunks]); the first of each norm is the
# emitted shape, the reference the others' outputs are compared with
SHAPES = [
    ("layer_norm_bf16", True, 256, 32, False),
    ("layer_norm_bf16", True, 256, 32, False, False, False, False, True),
    ("layer_norm_bf16", True, 256, 32, False, False, True, False, True),
    ("layer_norm_short_bf16", True, 128, 40, False),
    ("layer_norm_short_bf16", True, 128, 40, False, False, False, False, True),
    ("layer_norm_short_bf16", True, 128, 40, False, False, True, False, True),
    ("rms_norm_bf16", False, 256, 32, False),
    ("rms_norm_short_bf16", False, 256, 24, False),
]

CHUNK_SHAPES = [    ("layer_norm_bf16", True, 256, 32, False),
    ("layer_norm_bf16", True, 256, 32, False, False, True),
    ("layer_norm_bf16", True, 256, 32, False, False, False, True),
    ("layer_norm_short_bf16", True, 128, 40, False, False, False, True),
    ("rms_norm_bf16", False, 256, 32, False),
    ("rms_norm_bf16", False, 256, 32, False, False, True),
    ("rms_norm_bf16", False, 256, 32, False, False, False, True),
    ("rms_norm_short_bf16", False, 128, 40, False, False, False, True),
]

STREAMED_SHAPES = [
    ("layer_norm_bf16", True, 256, 32, False),
    ("layer_norm_bf16", True, 256, 32, False, True),
    ("layer_norm_bf16", True, 256, 32, False, False, True),
    ("layer_norm_bf16", True, 256, 32, False, True, True),
    ("rms_norm_bf16", False, 256, 32, False),
    ("rms_norm_bf16", False, 256, 32, False, True),
]

EARLIER_SHAPES = [
    ("layer_norm_short_bf16", True, 256, 24, False),
    ("layer_norm_short_bf16", True, 256, 24, True),
    ("layer_norm_short_bf16", True, 128, 40, False),
    ("layer_norm_short_bf16", True, 128, 40, True),
    ("layer_norm_short_bf16", True, 64, 80, False),
    ("rms_norm_short_bf16", False, 256, 24, False),
    ("rms_norm_short_bf16", False, 128, 40, False),
    ("layer_norm_bf16", True, 256, 32, False),
    ("layer_norm_bf16", True, 128, 64, False),
    ("layer_norm_bf16", True, 512, 16, False),
    ("rms_norm_bf16", False, 256, 32, False),
    ("rms_norm_bf16", False, 128, 64, False),
]

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/norm-shapes"
    os.makedirs(out, exist_ok=True)
    table = []
    for kernel, layer, threads, items, *how in SHAPES:
        name, source = shaped(kernel, threads, items, *how)
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
