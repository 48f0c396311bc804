// A wgmma tile's values leave mma's layout — lane l holding two neighbouring columns of each
// 8-column chunk, in rows l / 4 and l / 4 + 8 — four lanes to a row. Stored as pairs, 16-bit
// values fill half of each 32-byte sector a warp's store touches; so a row's lanes trade values
// first and each stores 16 bytes: 16-bit pairs across the four lanes (lane q then holds chunk
// q's eight columns), f32 pairs between neighbours (each then holds four columns).
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

// f32 pairs are 8 bytes: neighbouring lanes (columns 4p, 4p + 1 and 4p + 2, 4p + 3 of each
// chunk) trade one pair of two chunks, the even lane keeping the first chunk, the odd one the
// second, so each holds four neighbouring columns of its chunk
__device__ __forceinline__ float4 tessera_pair_exchange(const float2 (&pairs)[2])
{
    const bool odd = threadIdx.x % 2 == 1;
    const float2 kept = odd ? pairs[1] : pairs[0];
    const float2 sent = odd ? pairs[0] : pairs[1];
    float2 got;
    got.x = __shfl_xor_sync(0xffffffffu, sent.x, 1);
    got.y = __shfl_xor_sync(0xffffffffu, sent.y, 1);
    // the even lane's pair holds the first two of the four columns
    return odd ? make_float4(got.x, got.y, kept.x, kept.y) : make_float4(kept.x, kept.y, got.x, got.y);
}
