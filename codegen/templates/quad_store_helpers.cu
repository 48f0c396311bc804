// A warp tile's 16-bit values leave mma's layout — lane l holding two neighbouring columns of
// each 8-column chunk, in rows l / 4 and l / 4 + 8 — four lanes to a row: the four trade their
// pairs of four chunks so that lane q holds chunk q's eight columns, stored as one 16-byte
// access (a warp's store then fills whole 32-byte sectors, where pairs fill half of each).
template <class Pair>
__device__ __forceinline__ unsigned tessera_pair_bits(Pair pair)
{
    unsigned bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
}

// columns[s] = the pair lane s of this lane's quad held for chunk q (this lane's lane % 4):
// a 4 × 4 transpose across the quad, three shuffles, registers picked by selects (no indexing)
__device__ __forceinline__ void tessera_quad_transpose(const unsigned (&pairs)[4], unsigned (&columns)[4])
{
    const int q = threadIdx.x % 4;
    // columns[q] is the lane's own pair of its own chunk; the three rounds overwrite the others
    columns[0] = pairs[0];
    columns[1] = pairs[1];
    columns[2] = pairs[2];
    columns[3] = pairs[3];
    #pragma unroll
    for (int round = 1; round < 4; ++round) {
        // send the pair of the chunk the lane `round` places below takes; receive from `round` above
        const int send_chunk = (q - round) & 3;
        unsigned send = pairs[0];
        send = send_chunk == 1 ? pairs[1] : send;
        send = send_chunk == 2 ? pairs[2] : send;
        send = send_chunk == 3 ? pairs[3] : send;
        const int from = (q + round) & 3;
        const unsigned got = __shfl_sync(0xffffffffu, send, (threadIdx.x & ~3) | from);
        columns[0] = from == 0 ? got : columns[0];
        columns[1] = from == 1 ? got : columns[1];
        columns[2] = from == 2 ? got : columns[2];
        columns[3] = from == 3 ? got : columns[3];
    }
}
