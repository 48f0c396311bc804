// this block's next unit of work: tile `tile`'s k-tiles [k_begin, k_end)
__syncthreads();
if (tid == 0) {
    const int k_tiles = stream_k[SK_K_TILES];
    const int next = stream_k[SK_NEXT];
    if (stream_k[SK_DP_NEXT] < stream_k[SK_DP_TILES]) {
        stream_k[SK_TILE] = stream_k[SK_DP_NEXT];
        stream_k[SK_K_BEGIN] = 0;
        stream_k[SK_K_END] = k_tiles;
        stream_k[SK_DP_NEXT] += gridDim.x;
    } else if (next < stream_k[SK_END]) {
        stream_k[SK_TILE] = stream_k[SK_DP_TILES] + next / k_tiles;
        stream_k[SK_K_BEGIN] = next % k_tiles;
        stream_k[SK_K_END] = min(k_tiles, next % k_tiles + (stream_k[SK_END] - next));
        stream_k[SK_NEXT] = next + stream_k[SK_K_END] - stream_k[SK_K_BEGIN];
    } else {
        stream_k[SK_TILE] = -1;
    }
}
__syncthreads();
const int tile = stream_k[SK_TILE];
if (tile < 0) {
    break;
}
const int k_begin = stream_k[SK_K_BEGIN];
const int k_end = stream_k[SK_K_END];
{%- for (var, value) in bindings %}
const int {{ var }} = {{ value }};
{%- endfor %}
