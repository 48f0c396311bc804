// A cluster's blocks exchange one value each (cluster_sum, cluster_max, cluster_softmax_scale):
// each block pushes its value into a slot of every block's shared memory with st.async, whose
// bytes count on that block's mbarrier, and then waits on its own mbarrier and reads the values
// from its own shared memory — no cluster barrier after the exchange (a block leaves once every
// push into it has landed). The mbarriers are mbarrier_helpers.cu's; the simulator defines the
// same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
// the cluster barrier in two halves: the kernel arrives as it starts, the first exchange waits
// (then every block's mbarriers are initialised), so the wait is off the loads' path
__device__ __forceinline__ void tessera_cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void tessera_cluster_wait()
{
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

// st.async: `value` at `slot`'s place in the shared memory of the cluster's block `rank`, its
// bytes counted on the mbarrier at `bar`'s place there
__device__ __forceinline__ void tessera_cluster_push(float* slot, float value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "f"(value), "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
__device__ __forceinline__ void tessera_cluster_push(double* slot, double value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f64 [%0], %1, [%2];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "d"(value), "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
__device__ __forceinline__ void tessera_cluster_push(int* slot, int value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [%0], %1, [%2];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "r"(value), "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
__device__ __forceinline__ void tessera_cluster_push(unsigned* slot, unsigned value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "r"(value), "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
__device__ __forceinline__ void tessera_cluster_push(float2* slot, float2 value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "f"(value.x), "f"(value.y),
                    "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
__device__ __forceinline__ void tessera_cluster_push(double2* slot, double2 value, tessera_mbarrier* bar, int rank)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f64 [%0], {%1, %2}, [%3];\n"
                 :: "r"(tessera_cluster_address(slot, rank)), "d"(value.x), "d"(value.y),
                    "r"(tessera_cluster_address(bar, rank))
                 : "memory");
}
#endif  // TESSERA_SIM_H
