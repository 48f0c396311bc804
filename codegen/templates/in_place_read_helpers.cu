// An epilogue's map that reads a 16-bit tensor at each value's own place (a residual added), or
// β · C of a 16-bit C: the 16-byte path loads it 16 bytes a lane and trades the pairs back to the
// accumulators' places (tessera_quad_transpose, its own inverse); each pair's bits become the
// pair again here.
template <class Pair>
__device__ __forceinline__ Pair tessera_pair_of_bits(unsigned bits)
{
    Pair pair;
    memcpy(&pair, &bits, sizeof pair);
    return pair;
}
