"""The norm lab's block shapes: tessera's 16-bit LayerNorm and RMSNorm kernels as emitted (read from
tests/golden), reshaped — other threads × ITEMS per block (more, smaller blocks an SM keep
more of the rows' bytes in flight) — and changed one way each: `_raw` keeps the row in registers
as the loaded 16-bit elements, `_stream` reads x around L1 and stores y evict-first, `_chunks`
and `_shuffled` build the weight's and bias' vectors from aligned 16-byte chunks where the
emitted kernel reads them by element (vector_from.cuh). Writes the sources and `shapes.inc`
(the launch table shapes.cu includes) into OUT_DIR.

    python3 shapes.py /tmp/norm-shapes
"""
import os
import sys

from variants import golden, replace_once  # the emitted kernels, read from tests/golden


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


def shaped(kernel, threads, items, changes=()):
    """The emitted `kernel` at threads × items, with `changes` (any of "raw", "stream", "chunks",
    "shuffled") made to it; its name says them."""
    raw, stream, chunks, shuffled = ("raw" in changes, "stream" in changes, "chunks" in changes, "shuffled" in changes)
    s = golden(kernel)
    old_threads = int(s.split("constexpr int THREADS = ")[1].split(";")[0])
    old_items = int(s.split("constexpr int ITEMS = ")[1].split(";")[0])
    name = f"{kernel}_{threads}x{items}" + "".join("_" + change for change in changes)
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
    if chunks or shuffled:
        s = vectors_from_chunks(s, bias=kernel.startswith("layer"), shuffled=shuffled)
    return name, s


# (kernel, is LayerNorm, threads, items, changes); the first of each norm is its emitted shape, the
# reference the others' outputs are compared with. The session of 2026-11-27 also ran: 256 × 24
# raw, 128 × 40 (raw), 64 × 80 for the short LayerNorm; 128 × 64 and 512 × 16 for the 8192-column
# norms; "stream" on both 8192-column norms; LayerNorm's fma form (emitted since 1007c79).
SHAPES = [
    ("layer_norm_short_bf16", True, 128, 40, ()),
    ("layer_norm_short_bf16", True, 128, 40, ("chunks",)),
    ("rms_norm_short_bf16", False, 256, 24, ()),
    ("rms_norm_short_bf16", False, 256, 24, ("chunks",)),
]

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/norm-shapes"
    os.makedirs(out, exist_ok=True)
    table = []
    for kernel, layer, threads, items, changes in SHAPES:
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
