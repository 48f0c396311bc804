// mbarriers (sm_90): in a warp-specialised pipeline producer threads copy and compute threads
// wait — one mbarrier per stage says it is full, one says it is free again; a cluster
// reduction's blocks count one another's pushes on them. Each mbarrier counts arrivals (and
// bytes still to land); a phase completes when all expected have arrived, and waiters ask for a
// phase by its parity. The simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
using tessera_mbarrier = unsigned long long;

// an mbarrier's shared-memory address as the instructions take it: 32 bits
__device__ __forceinline__ unsigned tessera_mbarrier_address(const tessera_mbarrier* bar)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(bar));
}

__device__ __forceinline__ void tessera_mbarrier_init(tessera_mbarrier* bar, int arrivals)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" :: "r"(tessera_mbarrier_address(bar)), "r"(arrivals));
}

// the initialised mbarriers are visible to the async proxy (cp.async's arrivals) too
__device__ __forceinline__ void tessera_mbarrier_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void tessera_mbarrier_arrive(tessera_mbarrier* bar)
{
    asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}\n" :: "r"(tessera_mbarrier_address(bar)) : "memory");
}

// arrives on `bar` and raises the bytes its phase waits for by `bytes`: the phase completes once
// every expected arrival is in and that many bytes (of TMA copies, or of a cluster's pushes)
// have landed
__device__ __forceinline__ void tessera_mbarrier_expect_bytes(tessera_mbarrier* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(tessera_mbarrier_address(bar)), "r"(bytes) : "memory");
}

// waits until the phase of parity `parity` has completed
__device__ __forceinline__ void tessera_mbarrier_wait(tessera_mbarrier* bar, int parity)
{
    asm volatile(
        "{\n .reg .pred done;\n"
        "tessera_wait_%=:\n"
        " mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
        " @!done bra tessera_wait_%=;\n}\n" :: "r"(tessera_mbarrier_address(bar)), "r"(parity) : "memory");
}

// arrives on `bar` once every cp.async this thread has issued so far has landed
__device__ __forceinline__ void tessera_async_arrive_on(tessera_mbarrier* bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" :: "r"(tessera_mbarrier_address(bar)) : "memory");
}

// a warpgroup gives registers back (producers) or takes them (compute threads): setmaxnreg, an
// sm_90a instruction (tessera compiles such sources for sm_90a); compiled for another target the
// kernel still runs, with the launch's even share of registers
template <int REGISTERS>
__device__ __forceinline__ void tessera_registers_down()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(REGISTERS));
#endif
}

template <int REGISTERS>
__device__ __forceinline__ void tessera_registers_up()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(REGISTERS));
#endif
}
#endif  // TESSERA_SIM_H
