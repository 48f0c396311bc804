// x.align_offset(..): the elements from p to the first address aligned for a BYTES-wide access
template <int BYTES, typename T>
__device__ __forceinline__ int tessera_align_offset(const T* p)
{
    return static_cast<int>((BYTES - reinterpret_cast<unsigned long long>(p) % BYTES) % BYTES / sizeof(T));
}

// x.vector_at(..): one vector access at an element the kernel found aligned
// (the simulation defines its own, which stops a misaligned access as the GPU would)
#ifndef TESSERA_SIM_H
template <typename V, typename T>
__device__ __forceinline__ V& tessera_vector_at(T* p)
{
    return *reinterpret_cast<V*>(p);
}

template <typename V, typename T>
__device__ __forceinline__ const V& tessera_vector_at(const T* p)
{
    return *reinterpret_cast<const V*>(p);
}
#endif  // TESSERA_SIM_H
