"""The sgemm_bt lab's kernels, written into OUT_DIR: SGEMM V13 on B stored [N, K] as tessera
emits it (`sgemm_v13_bt`: B's tile transposed into [BK, BN] shared memory by 4-byte cp.async), and
`k16`: B's tile copied as it is stored, [BN, BK], by 16-byte cp.async into rows whose 16-byte
chunks are XOR-swizzled by (row / 4) % 8, and the product reading each of a thread's 8 columns
four k at a time (one 16-byte load per column per 4 k-steps: as many loads as before, and
conflict-free, since the 8 lanes of a phase hold columns 4 apart). `k16_double` also loads the
next four k's columns while the current ones are multiplied.

    python3 sgemm_bt_k16.py /tmp/bt   (then see sgemm_bt_main.cu)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import golden, replace_once  # noqa: E402  (tests/golden, benchmarks/lab/golden.py)


WRAPPER = """
// lab wrapper: launch from the harness's translation unit
void launch_{variant}(int blocks, const float* a, const float* b, float* c, int M, int K, int N) {{
    {kernel}<<<blocks, 384, {smem}>>>(a, b, c, 1.0f, 0.0f, M, K, N, K, K, N);
}}
void prepare_{variant}() {{ cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem}); }}
"""

EMITTED = golden("sgemm_v13_bt")
SMEM = 150528

B_COPY = """
                    // lab: B's tile [BN, BK] as stored, 16 B a copy, chunk q of row n at chunk q ^ (n / 4) % 8
                    {
                        const int b_row0 = bx * BN;
                        const int b_col0 = k * BK;
                        const bool whole = N - b_row0 >= BN && K - b_col0 >= BK;
                        #pragma unroll 2
                        for (int q = 0; q < BN * BK / 4 / PRODUCERS; ++q) {
                            const int index = threadIdx.x - THREADS + q * PRODUCERS;
                            const int row = index / (BK / 4);
                            const int chunk = index % (BK / 4);
                            const int cols_left = K - b_col0 - chunk * 4;
                            const int valid = whole ? 16 : (b_row0 + row < N ? min(max(cols_left, 0), 4) * 4 : 0);
                            const float* src = valid > 0 ? &b[(b_row0 + row) * b_ld + b_col0 + chunk * 4] : b;
                            const unsigned dst = tessera_shared_address(&b_s[stage][row][(chunk ^ (row >> 2 & 7)) * 4]);
                            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: "r"(dst), "l"(src), "r"(valid));
                        }
                    }
"""


def k16(double):
    s = replace_once(EMITTED, "sgemm_v13_bt(", ("k16_double" if double else "k16") + "(")
    s = replace_once(s, "float (&b_s)[3][BK][BN + 4] = *reinterpret_cast<float (*)[3][BK][BN + 4]>(tessera_smem + 50688);",
                     "float (&b_s)[3][BN][BK] = *reinterpret_cast<float (*)[3][BN][BK]>(tessera_smem + 50688);")
    # drop the emitted B copy (the block from its comment to the end of the per-thread loop's body)
    start = s.index("                        {\n                            // copy(b.tile([bx, k], [BN, BK]), &b_s.t()): the tile")
    end = s.index("                    // the stage is full when this producer's copies")
    body = s[start:end]
    # the emitted copy block closes three levels: its own two braces, then the `for (tid ..)` loop
    assert body.rstrip().endswith("}\n                    }") or body.rstrip().endswith("}"), body[-200:]
    s = s[:start] + "                    }\n" + B_COPY + s[end:]
    # the product: b read four k at a time per column
    old_first = ("                    *reinterpret_cast<float4*>(&b_frag[0][0]) = *reinterpret_cast<const float4*>(&b_s[stage][0][thread_col * (TN / 2)]);\n"
                 "                    *reinterpret_cast<float4*>(&b_frag[0][4]) = *reinterpret_cast<const float4*>(&b_s[stage][0][BN / 2 + thread_col * (TN / 2)]);\n")
    s = replace_once(s, "                    float b_frag[2][TN];\n", "                    float b_quad[%d][TN][4];\n" % (2 if double else 1))
    load = ("*reinterpret_cast<float4*>(&b_quad[{buf}][{j}][0]) = *reinterpret_cast<const float4*>(&b_s[stage][{col}][(({group}) ^ (thread_col & 7)) * 4]);")
    cols = [("thread_col * 4 + %d" % j) if j < 4 else ("BN / 2 + thread_col * 4 + %d" % (j - 4)) for j in range(8)]
    if double:
        first = "".join("                    " + load.format(buf=0, j=j, col=cols[j], group="0") + "\n" for j in range(8))
    else:
        first = ""
    s = replace_once(s, old_first, first)
    old_next = ("                                *reinterpret_cast<float4*>(&b_frag[(step + 1) % 2][0]) = *reinterpret_cast<const float4*>(&b_s[stage][kk + 1][thread_col * (TN / 2)]);\n"
                "                                *reinterpret_cast<float4*>(&b_frag[(step + 1) % 2][4]) = *reinterpret_cast<const float4*>(&b_s[stage][kk + 1][BN / 2 + thread_col * (TN / 2)]);\n")
    s = replace_once(s, old_next, "")
    if double:
        group_loads = ("                            if (step % 4 == 0 && kk + 4 < BK) {\n"
                       + "".join("                                " + load.format(buf="(kk / 4 + 1) % 2", j=j, col=cols[j], group="kk / 4 + 1") + "\n" for j in range(8))
                       + "                            }\n")
        use = "b_quad[kk / 4 % 2][j][step % 4]"
    else:
        group_loads = ("                            if (step % 4 == 0) {\n"
                       + "".join("                                " + load.format(buf=0, j=j, col=cols[j], group="kk / 4") + "\n" for j in range(8))
                       + "                            }\n")
        use = "b_quad[0][j][step % 4]"
    s = replace_once(s, "                            const int kk = k0 + step;\n",
                     "                            const int kk = k0 + step;\n" + group_loads)
    s = replace_once(s, "acc[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];", "acc[i][j] += a_frag[step % 2][i] * " + use + ";")
    return s


VARIANTS = {
    "emitted": lambda: EMITTED + WRAPPER.format(variant="emitted", kernel="sgemm_v13_bt", smem=SMEM),
    "k16": lambda: k16(False) + WRAPPER.format(variant="k16", kernel="k16", smem=SMEM),
    "k16_double": lambda: k16(True) + WRAPPER.format(variant="k16_double", kernel="k16_double", smem=SMEM),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/bt"
    os.makedirs(out, exist_ok=True)
    for name, make in VARIANTS.items():
        with open(os.path.join(out, name + ".cu"), "w") as f:
            f.write(make())
    print(" ".join(VARIANTS))
