// x.vector_from(..): the elements of V from any element p of a row [first, end) — the aligned
// 16-byte chunks that hold them, each loaded whole, funnel-shifted into place (a warp whose lanes
// read consecutive vectors loads every chunk of its run twice, from L1, where reading the
// elements one by one would move a quarter of each sector per load); element by element where a
// chunk would reach outside the row, or for a vector of other than 16 bytes
template <typename V, typename T>
__device__ __forceinline__ V tessera_vector_from(const T* p, const T* first, const T* end)
{
    const unsigned long long address = reinterpret_cast<unsigned long long>(p);
    const int skew = static_cast<int>(address % 16);
    const uint4* chunk = reinterpret_cast<const uint4*>(address - skew);
    V out;
    if (sizeof(V) != 16 || reinterpret_cast<const T*>(chunk) < first
        || reinterpret_cast<const T*>(chunk + (skew == 0 ? 1 : 2)) > end) {
#pragma unroll
        for (int k = 0; k < static_cast<int>(sizeof(V) / sizeof(T)); ++k) {
            reinterpret_cast<T*>(&out)[k] = p[k];
        }
        return out;
    }
    const uint4 lo = chunk[0];
    unsigned int* words = reinterpret_cast<unsigned int*>(&out);
    if (skew == 0) {
        words[0] = lo.x; words[1] = lo.y; words[2] = lo.z; words[3] = lo.w;
        return out;
    }
    const uint4 hi = chunk[1];
    const unsigned int both[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    // word q of the pair starts the vector, shifted right by the bytes before it in that word
    const int q = skew / 4, bits = 8 * (skew % 4);
    unsigned int picked[5];
#pragma unroll
    for (int w = 0; w < 5; ++w) {
        picked[w] = q == 0 ? both[w] : q == 1 ? both[w + 1] : q == 2 ? both[w + 2] : both[w + 3];
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        words[w] = __funnelshift_r(picked[w], picked[w + 1], bits);
    }
    return out;
}
