// lab: V's elements from any element p — the two 16-byte chunks that hold them, shifted into
// place by a funnel shift; element by element where the chunks would reach outside [first, end)
template <typename V, typename T>
__device__ __forceinline__ V lab_vector_from(const T* p, const T* first, const T* end)
{
    static_assert(sizeof(V) == 16, "16-byte vectors");
    const unsigned long long address = reinterpret_cast<unsigned long long>(p);
    const int skew = static_cast<int>(address % 16);
    if (skew == 0) return *reinterpret_cast<const V*>(p);
    const uint4* chunk = reinterpret_cast<const uint4*>(address - skew);
    V out;
    if (reinterpret_cast<const T*>(chunk) < first || reinterpret_cast<const T*>(chunk + 2) > end) {
        #pragma unroll
        for (int k = 0; k < 16 / (int)sizeof(T); ++k) reinterpret_cast<T*>(&out)[k] = p[k];
        return out;
    }
    const uint4 lo = chunk[0], hi = chunk[1];
    const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const int q = skew / 4, shift = 8 * (skew % 4);
    unsigned picked[5];
    #pragma unroll
    for (int w = 0; w < 5; ++w) picked[w] = q == 0 ? words[w] : q == 1 ? words[w + 1] : q == 2 ? words[w + 2] : words[w + 3];
    unsigned* result = reinterpret_cast<unsigned*>(&out);
    #pragma unroll
    for (int w = 0; w < 4; ++w) result[w] = __funnelshift_r(picked[w], picked[w + 1], shift);
    return out;
}

// lab: the same vector, each 16-byte chunk loaded once a warp: lane l's second chunk is lane
// l + 1's first (the warp's lanes on consecutive vectors, one skew for all, as in a row of the
// norms), passed by a shuffle; the last active lane loads its own. Called by the lanes of a
// prefix of the warp (those with a vector).
template <typename V, typename T>
__device__ __forceinline__ V lab_vector_shuffled(const T* p, const T* end)
{
    static_assert(sizeof(V) == 16, "16-byte vectors");
    const unsigned mask = __activemask();
    const unsigned long long address = reinterpret_cast<unsigned long long>(p);
    const int skew = static_cast<int>(address % 16);
    const uint4* chunk = reinterpret_cast<const uint4*>(address - skew);
    const uint4 lo = chunk[0];
    if (skew == 0) return *reinterpret_cast<const V*>(&lo);
    const int lane = threadIdx.x % 32;
    uint4 hi;
    hi.x = __shfl_down_sync(mask, lo.x, 1);
    hi.y = __shfl_down_sync(mask, lo.y, 1);
    hi.z = __shfl_down_sync(mask, lo.z, 1);
    hi.w = __shfl_down_sync(mask, lo.w, 1);
    if (lane == 31 || !((mask >> (lane + 1)) & 1)) {
        if (reinterpret_cast<const T*>(chunk + 2) <= end) {
            hi = chunk[1];
        } else {
            V out;
            #pragma unroll
            for (int k = 0; k < 16 / (int)sizeof(T); ++k) reinterpret_cast<T*>(&out)[k] = p[k];
            return out;
        }
    }
    const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const int q = skew / 4, shift = 8 * (skew % 4);
    unsigned picked[5];
    #pragma unroll
    for (int w = 0; w < 5; ++w) picked[w] = q == 0 ? words[w] : q == 1 ? words[w + 1] : q == 2 ? words[w + 2] : words[w + 3];
    V out;
    unsigned* result = reinterpret_cast<unsigned*>(&out);
    #pragma unroll
    for (int w = 0; w < 4; ++w) result[w] = __funnelshift_r(picked[w], picked[w + 1], shift);
    return out;
}
