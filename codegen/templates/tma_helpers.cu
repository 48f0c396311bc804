// TMA (sm_90): the Tensor Memory Accelerator copies a box of a 2-D tensor into shared memory,
// described by a tensor map the launch builds (cuTensorMapEncodeTiled: pointer, shape, leading
// dimension, box, swizzle) and passes as a `__grid_constant__` parameter. The hardware writes
// the box in the map's swizzle, zero-fills what lies outside the tensor, and counts the bytes
// that landed on an mbarrier. The simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
struct __align__(64) tessera_tensor_map {
    unsigned long long opaque[16];
};

// brings the tensor map into the TMA unit's cache before the first copy needs it
__device__ __forceinline__ void tessera_tma_prefetch(const tessera_tensor_map* map)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// copies the box whose first element is column `col`, row `row` of the map's tensor to `shared`
// (128-byte aligned; 1024 for the 128-byte swizzle's 8-row atoms), counting its bytes on `bar`
__device__ __forceinline__ void tessera_tma_load(void* shared, const tessera_tensor_map* map, int col, int row,
                                                 tessera_mbarrier* bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        :: "r"(tessera_shared_address(shared)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row),
           "r"(tessera_shared_address(bar))
        : "memory");
}

// the same for a batched tile's 3-D map: the box at column `col`, row `row` of matrix `batch`
// (rows past the matrix's last read zeros, not the next matrix's)
__device__ __forceinline__ void tessera_tma_load_3d(void* shared, const tessera_tensor_map* map, int col, int row,
                                                    int batch, tessera_mbarrier* bar)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
        :: "r"(tessera_shared_address(shared)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row),
           "r"(batch), "r"(tessera_shared_address(bar))
        : "memory");
}
#endif  // TESSERA_SIM_H
