// cp.async (sm_80 and newer): global → shared memory without a trip through registers. A copy
// of BYTES reads `valid` of them from `global` and zero-fills the rest, so edge tiles need no
// branch around it. Copies land in order of their commit groups; `tessera_async_wait<N>` waits
// until at most N of this thread's groups are still in flight (a barrier then makes every
// thread's copies visible). The simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
template <int BYTES>
__device__ __forceinline__ void tessera_async_copy(void* shared, const void* global, int valid)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    if constexpr (BYTES == 2) {
        // cp.async moves 4, 8 or 16 bytes: a lone 16-bit element goes through a register
        const unsigned short bits = valid ? *static_cast<const unsigned short*>(global) : 0;
        asm volatile("st.shared.u16 [%0], %1;\n" :: "r"(address), "h"(bits));
    } else if constexpr (BYTES == 16) {
        // .cg: 16-byte copies skip L1, as the tile is read once per block
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(address), "l"(global), "r"(valid));
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" :: "r"(address), "l"(global), "n"(BYTES), "r"(valid));
    }
}

// A shared-memory address as cp.async takes it: 32 bits, where a generic pointer takes 64, and
// converted once per tile rather than per copy. `tessera_async_copy_to` copies to the element
// `offset` elements of T past it.
using tessera_shared_ref = unsigned;

__device__ __forceinline__ tessera_shared_ref tessera_shared_address(const void* shared)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(shared));
}

template <int BYTES, class T>
__device__ __forceinline__ void tessera_async_copy_to(tessera_shared_ref shared, int offset, const T* global, int valid)
{
    const unsigned address = shared + offset * static_cast<int>(sizeof(T));
    if constexpr (BYTES == 2) {
        // cp.async moves 4, 8 or 16 bytes: a lone 16-bit element (rows not 4-byte aligned) goes
        // through a register, and is in place once the barrier after the wait has passed
        const unsigned short bits = valid ? *reinterpret_cast<const unsigned short*>(global) : 0;
        asm volatile("st.shared.u16 [%0], %1;\n" :: "r"(address), "h"(bits));
    } else if constexpr (BYTES == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(address), "l"(global), "r"(valid));
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" :: "r"(address), "l"(global), "n"(BYTES), "r"(valid));
    }
}

__device__ __forceinline__ void tessera_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int PENDING>
__device__ __forceinline__ void tessera_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING));
}
#endif  // TESSERA_SIM_H
