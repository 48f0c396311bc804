"""The wgmma epilogue lab's kernels, written into OUT_DIR: HGEMM V11 with a bf16 C as tessera
emits it — plain (`hgemm_v11_bf16_to_bf16`), with the bias (`hgemm_bias_bf16`), with bias + GELU
fused (`hgemm_bias_gelu_bf16`), the in-place `gelu_bf16` that follows the bias GEMM in
`tessera::gemm_bias_gelu` today — read from tests/golden, and `by_producers`: the fused kernel
with the GELU moved off the compute warpgroups. Its compute threads store α·A·B + bias (rounded
to bf16) and arrive on an mbarrier; three warps of the producer warpgroup, idle until now (one
thread issues the TMA copies), wait on it and apply the GELU to the stored tile in place while
the compute warpgroups run the block's next tile. The block's last tile keeps the fused store.

    python3 wgmma_variants.py /tmp/wgmma-lab   (then see wgmma_main.cu)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden import golden, replace_once  # noqa: E402  (tests/golden, benchmarks/lab/golden.py)


GEMM_WRAPPER = """
// lab wrapper: launch from the harness's translation unit
void launch_{variant}(int blocks, const __nv_bfloat16* a, const __nv_bfloat16* b, const __nv_bfloat16* bias, __nv_bfloat16* c,
                      float alpha, int M, int K, int N, const void* a_map, const void* b_map) {{
    {kernel}<<<blocks, 384, 196608>>>({args}, *reinterpret_cast<const tessera_tensor_map*>(a_map), *reinterpret_cast<const tessera_tensor_map*>(b_map));
}}
void prepare_{variant}() {{ cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608); }}
"""


def gemm(variant, kernel, source, bias=True):
    args = "a, b, bias, c, alpha, M, K, N, K, N, N" if bias else "a, b, c, alpha, 0.0f, M, K, N, K, N, N"
    return source + GEMM_WRAPPER.format(variant=variant, kernel=kernel, args=args)


GELU_WRAPPER = """
void launch_gelu(__nv_bfloat16* c, int M, int N) { gelu_bf16<<<dim3(M, (N + 4095) / 4096), 256>>>(c, M, N, N); }
"""

FUSED = golden("hgemm_bias_gelu_bf16")
MAP = "return tessera_gelu(alpha * v + static_cast<float>(bias[col])); };"
EPILOGUE = "            // copy(&acc, c.tile([by, bx], [BM, BN])).map("
END = "            }\n        }\n    }\n}"

HELPERS = """
// lab: whether the phase of `bar` with this parity has completed, without waiting
__device__ __forceinline__ bool lab_mbarrier_test(tessera_mbarrier* bar, int parity)
{
    unsigned done;
    asm volatile("{\\n .reg .pred p;\\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\\n selp.u32 %0, 1, 0, p;\\n}\\n"
                 : "=r"(done) : "r"(tessera_mbarrier_address(bar)), "r"(parity) : "memory");
    return done != 0;
}
"""

PASS = """
            // lab: warps 1-3 of the producer warpgroup take the GELU of each tile the compute threads hand
            // over (tessera_handed: its index, or -1 once they are done)
            if (tid >= THREADS + 32) {
                constexpr int PASSERS = 96;
                const int p = tid - THREADS - 32;
                for (int passes = 0;; ++passes) {
                    tessera_mbarrier_wait(&tessera_stored, passes & 1);
                    const int tile = tessera_handed;
                    if (tile < 0) break;
                    const int group_first_row = tile / (8 * tiles_x) * 8;
                    const int group_rows = min(tiles_y - group_first_row, 8);
                    const int in_group = tile % (8 * tiles_x);
                    const int bx = in_group / group_rows;
                    const int by = group_first_row + in_group % group_rows;
                    const int r0 = by * BM;
                    const int c0 = bx * BN;
                    if (M - r0 >= BM && N - c0 >= BN && c_ld % 8 == 0) {
                        #pragma unroll 1
                        for (int e = p; e < BM * BN / 8; e += UNROLL * PASSERS) {
                            uint4 chunk[UNROLL];
                            #pragma unroll
                            for (int u = 0; u < UNROLL; ++u) {
                                const int f = e + u * PASSERS;
                                if (f < BM * BN / 8) chunk[u] = *reinterpret_cast<const uint4*>(&c[(r0 + f / (BN / 8)) * c_ld + c0 + f % (BN / 8) * 8]);
                            }
                            #pragma unroll
                            for (int u = 0; u < UNROLL; ++u) {
                                const int f = e + u * PASSERS;
                                if (f < BM * BN / 8) {
                                    __nv_bfloat16* v = reinterpret_cast<__nv_bfloat16*>(&chunk[u]);
                                    #pragma unroll
                                    for (int x = 0; x < 8; ++x) v[x] = __float2bfloat16_rn(tessera_gelu(static_cast<float>(v[x])));
                                    *reinterpret_cast<uint4*>(&c[(r0 + f / (BN / 8)) * c_ld + c0 + f % (BN / 8) * 8]) = chunk[u];
                                }
                            }
                        }
                    } else {
                        for (int e = p; e < BM * BN; e += PASSERS) {
                            const int row = r0 + e / BN, col = c0 + e % BN;
                            if (row < M && col < N) c[row * c_ld + col] = __float2bfloat16_rn(tessera_gelu(static_cast<float>(c[row * c_ld + col])));
                        }
                    }
                    tessera_mbarrier_arrive(&tessera_passed);
                }
                return;
            }
"""


def by_producers(unroll):
    s = replace_once(FUSED, "hgemm_bias_gelu_bf16(", "by_producers_%d(" % unroll)
    s = replace_once(s, 'extern "C" __global__', HELPERS + 'extern "C" __global__')
    s = replace_once(s, "__shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];",
                     "__shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];\n"
                     "        __shared__ tessera_mbarrier tessera_stored, tessera_passed;\n"
                     "        __shared__ int tessera_handed;\n        __shared__ int tessera_hand_over[2];")
    s = replace_once(s, "            tessera_mbarrier_init_fence();",
                     "            tessera_mbarrier_init(&tessera_stored, THREADS);\n"
                     "            tessera_mbarrier_init(&tessera_passed, 96);\n            tessera_mbarrier_init_fence();")
    s = replace_once(s, "            if (tid != THREADS) return;\n",
                     "            constexpr int UNROLL = %d;\n" % unroll + PASS + "            if (tid != THREADS) return;\n")
    s = replace_once(s, "        int drained = 0;  // k-tiles this block's compute threads have used\n",
                     "        int drained = 0;  // k-tiles this block's compute threads have used\n"
                     "        int handed = 0, epilogues = 0;  // lab: tiles handed to the producer warps; epilogues run\n")
    start = s.index(EPILOGUE)
    end = s.index(END, start) + len("            }\n")
    block = s[start:end]
    linear = replace_once(block, MAP, "return alpha * v + static_cast<float>(bias[col]); };")
    both = ("            // lab: hand the tile over if it is not the block's last and the producer warps are idle\n"
            "            if (tid == 0) tessera_hand_over[epilogues & 1] = tile + gridDim.x < tiles && (handed == 0 || lab_mbarrier_test(&tessera_passed, (handed - 1) & 1));\n"
            "            asm volatile(\"bar.sync 1, 256;\" ::: \"memory\");\n"
            "            const bool hand_over = tessera_hand_over[epilogues & 1];\n"
            "            ++epilogues;\n"
            "            if (!hand_over) {\n" + block
            + "            } else {  // lab: α·v + bias here; the producer warps take the GELU\n" + linear
            + "            if (tid == 0) tessera_handed = tile;\n"
            "            tessera_mbarrier_arrive(&tessera_stored);\n            ++handed;\n            }\n")
    s = s[:start] + both + s[end:]
    # after the compute threads' last tile: tell the producer warps there is no more
    tail = ("        // lab: the producer warps are done with the last tile handed over; tell them there is no more\n"
            "        if (handed > 0) tessera_mbarrier_wait(&tessera_passed, (handed - 1) & 1);\n"
            "        if (tid == 0) tessera_handed = -1;\n"
            "        tessera_mbarrier_arrive(&tessera_stored);\n")
    assert s.endswith(END + "\n") or s.endswith(END), repr(s[-40:])
    cut = s.rindex(END)
    return s[:cut] + "            }\n        }\n" + tail + "    }\n}\n"


VARIANTS = {
    "plain": lambda: gemm("plain", "hgemm_v11_bf16_to_bf16", golden("hgemm_v11_bf16_to_bf16"), bias=False),
    "bias": lambda: gemm("bias", "hgemm_bias_bf16", golden("hgemm_bias_bf16")),
    "emitted": lambda: gemm("emitted", "hgemm_bias_gelu_bf16", FUSED),
    "by_producers_2": lambda: gemm("by_producers_2", "by_producers_2", by_producers(2)),
    "by_producers_4": lambda: gemm("by_producers_4", "by_producers_4", by_producers(4)),
    "gelu": lambda: golden("gelu_bf16") + GELU_WRAPPER,
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/wgmma-lab"
    os.makedirs(out, exist_ok=True)
    for name, make in VARIANTS.items():
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(make())
    print(" ".join(VARIANTS))
