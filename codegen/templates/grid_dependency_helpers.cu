// A programmatic dependent launch (sm_90 on) may start this grid while the one before it on the
// stream is still finishing: griddepcontrol.wait returns once that grid has completed and its
// writes are visible; launch_dependents lets the next grid launch once every block of this one
// has issued it (its blocks then wait in turn). Both do nothing under an ordinary launch. The
// simulator defines the same functions in tessera_sim.h.
#ifndef TESSERA_SIM_H
__device__ __forceinline__ void tessera_wait_for_prior_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void tessera_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif  // TESSERA_SIM_H
