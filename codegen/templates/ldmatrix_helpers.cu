// Tensor cores (sm_80 and newer). ldmatrix loads 8 × 8 tiles of 16-bit values from shared
// memory, each lane giving the address of one 16-byte row (lanes 0-7 the rows of the first
// tile, 8-15 of the second, ..), and hands lane l row l / 4, elements 2 · (l % 4) and the next
// of each (.trans: column l / 4 of rows 2 · (l % 4) and the next); of 32-bit values, lane l gets
// row l / 4, element l % 4. The simulator defines the same functions in tessera_sim.h with the
// PTX ISA's lane layouts.
#ifndef TESSERA_SIM_H
template <bool TRANS>
__device__ __forceinline__ void tessera_ldmatrix_x4(unsigned (&r)[4], const void* row)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if constexpr (TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
    } else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
    }
}

template <bool TRANS>
__device__ __forceinline__ void tessera_ldmatrix_x2(unsigned (&r)[2], const void* row)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if constexpr (TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(address));
    } else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(address));
    }
}
#endif  // TESSERA_SIM_H
