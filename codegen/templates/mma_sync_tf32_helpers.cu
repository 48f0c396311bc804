// TF32: mma.sync m16n8k8 reads 32-bit registers holding f32 values and ignores their low 13
// bits; cvt.rna rounds them there first (to nearest, ties away from zero).
#ifndef TESSERA_SIM_H
__device__ __forceinline__ unsigned tessera_tf32(float x)
{
    unsigned rounded;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(x));
    return rounded;
}

template <int N>
__device__ __forceinline__ void tessera_round_to_tf32(unsigned (&r)[N])
{
    #pragma unroll
    for (int i = 0; i < N; ++i) {
        r[i] = tessera_tf32(__uint_as_float(r[i]));
    }
}

__device__ __forceinline__ void tessera_mma_m16n8k8_tf32(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif  // TESSERA_SIM_H
