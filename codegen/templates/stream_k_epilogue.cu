// {{ dsl }} under stream-K: a tile whose whole k loop ran here is
// stored at once. Otherwise this block's share goes to its workspace slot (2 · block for a
// share that continues a tile, 2 · block + 1 for one that starts it), and the last block to
// finish the tile adds all shares in k order — the same sum whichever block is last — and stores it.
{
    const int k_tiles = stream_k[SK_K_TILES];
    bool store = k_begin == 0 && k_end == k_tiles;
    // the accumulator's registers in their array order, whatever its shape (a thread tile's
    // [TM][TN], a warp tile's [WM / 16][WN / 8][4]): thread tid's values of every share alike
    {{ element }} (&values)[THREAD_VALUES] = reinterpret_cast<{{ element }} (&)[THREAD_VALUES]>({{ acc }});
    if (!store) {
        const int split_tile = tile - stream_k[SK_DP_TILES];
        {{ element }}* share = tessera_partials + (size_t)(2 * blockIdx.x + (k_begin == 0 ? 1 : 0)) * TILE_VALUES + tid;
        #pragma unroll
        for (int v = 0; v < THREAD_VALUES; ++v) {
            __stcg(share + v * THREADS, values[v]);
        }
        // the share is visible device-wide before the count says it is there
        __threadfence();
        __syncthreads();
        if (tid == 0) {
            const int done = atomicAdd(&tessera_tile_counters[split_tile], k_end - k_begin) + (k_end - k_begin);
            stream_k[SK_LAST] = done == k_tiles;
        }
        __syncthreads();
        store = stream_k[SK_LAST];
        if (store) {
            __threadfence();
            // the blocks holding this tile's shares: from the one with its first k-tile to the one with its last
            const int sk_q = stream_k[SK_Q];
            const int sk_r = stream_k[SK_R];
            const int first_k = split_tile * k_tiles;
            const int big = sk_r * (sk_q + 1);  // the k-tiles of the blocks that take one more
            const int first_block = first_k < big ? first_k / (sk_q + 1) : sk_r + (first_k - big) / sk_q;
            const int last_k = first_k + k_tiles - 1;
            const int last_block = last_k < big ? last_k / (sk_q + 1) : sk_r + (last_k - big) / sk_q;
            // the first share as it is, then each next one added
            const {{ element }}* first = tessera_partials + (size_t)(2 * first_block + 1) * TILE_VALUES + tid;
            #pragma unroll
            for (int v = 0; v < THREAD_VALUES; ++v) {
                values[v] = __ldcg(first + v * THREADS);
            }
            #pragma unroll 1
            for (int g = first_block + 1; g <= last_block; ++g) {
                const {{ element }}* theirs = tessera_partials + (size_t)(2 * g) * TILE_VALUES + tid;
                #pragma unroll
                for (int v = 0; v < THREAD_VALUES; ++v) {
                    values[v] += __ldcg(theirs + v * THREADS);
                }
            }
            if (tid == 0) {
                tessera_tile_counters[split_tile] = 0;  // ready for the next launch
            }
        }
    }
    if (store) {
{{ epilogue }}
    }
}
