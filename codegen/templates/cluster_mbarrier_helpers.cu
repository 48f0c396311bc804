// An arrival on the mbarrier at `bar`'s place in the shared memory of the cluster's block `rank`
// (sm_90 clusters; the simulator defines the same function in tessera_sim.h). Release at the
// arriving block's scope, as CUTLASS's cluster barriers do: it says that block's wgmma reads of a
// stage are done (their wait_group has returned); `.release.cluster` made V18's compute warps
// wait for it and cost 30% of its speed on an H200.
#ifndef TESSERA_SIM_H
__device__ __forceinline__ void tessera_mbarrier_arrive_in(tessera_mbarrier* bar, int rank)
{
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n"
        :: "r"(tessera_mbarrier_address(bar)), "r"(rank) : "memory");
}
#endif  // TESSERA_SIM_H
