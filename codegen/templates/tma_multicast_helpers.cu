// TMA multicast (sm_90 clusters): one block's copy lands at the same place in the shared memory
// of every block of its cluster that `mask` names (bit r: rank r), its bytes counted on each
// block's mbarrier at `bar`'s place. The simulator defines the same function in tessera_sim.h.
#ifndef TESSERA_SIM_H
__device__ __forceinline__ void tessera_tma_load_multicast(void* shared, const tessera_tensor_map* map, int col, int row,
                                                           tessera_mbarrier* bar, unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;\n"
        :: "r"(tessera_shared_address(shared)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row),
           "r"(tessera_shared_address(bar)), "h"(mask)
        : "memory");
}
#endif  // TESSERA_SIM_H
