// A register A operand kept from one k-tile to the next (a `.deferred()` product's, or a TF32
// A the lanes load a k-step at a time): its registers stay as they are (the compiler reuses
// none of them) until the wait, as wgmma may read them up to then. (The simulator defines the
// same.)
#ifndef TESSERA_SIM_H
template <int STEPS>
__device__ __forceinline__ void tessera_wgmma_fence_operands(unsigned (&a)[STEPS][4])
{
    #pragma unroll
    for (int i = 0; i < STEPS; ++i) {
        #pragma unroll
        for (int v = 0; v < 4; ++v) asm volatile("" : "+r"(a[i][v])::"memory");
    }
}
#endif  // TESSERA_SIM_H
