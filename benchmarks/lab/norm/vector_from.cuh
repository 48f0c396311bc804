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
