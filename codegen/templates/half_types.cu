// 16-bit floats: CUDA's __half and __nv_bfloat16 (the simulator defines the same in
// tessera_sim.h), and vectors of them for 4-, 8- and 16-byte accesses, which CUDA lacks.
#ifndef TESSERA_SIM_H
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif  // TESSERA_SIM_H
struct __align__(4) tessera_f16x2 { __half v[2]; };
struct __align__(8) tessera_f16x4 { __half v[4]; };
struct __align__(16) tessera_f16x8 { __half v[8]; };
struct __align__(4) tessera_bf16x2 { __nv_bfloat16 v[2]; };
struct __align__(8) tessera_bf16x4 { __nv_bfloat16 v[4]; };
struct __align__(16) tessera_bf16x8 { __nv_bfloat16 v[8]; };

// Two 16-bit values in one 32-bit register, the first in the low half: the operand format of
// mma.sync (through the bit-cast intrinsics, so nothing goes through local memory).
__device__ __forceinline__ unsigned tessera_pack(__half low, __half high)
{
    return static_cast<unsigned>(__half_as_ushort(low)) | static_cast<unsigned>(__half_as_ushort(high)) << 16;
}

__device__ __forceinline__ unsigned tessera_pack(__nv_bfloat16 low, __nv_bfloat16 high)
{
    return static_cast<unsigned>(__bfloat16_as_ushort(low)) | static_cast<unsigned>(__bfloat16_as_ushort(high)) << 16;
}
