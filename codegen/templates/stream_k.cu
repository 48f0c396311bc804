// {{ dsl }}: stream-K — the gridDim.x blocks (as many as stay
// resident) share the tiles' k loops evenly. The tiles of all but the last full round go one
// to a block; the rest are cut into runs of k-tiles, q or q + 1 per block, so no SM idles
// through a last, partial round. A tile split between blocks is summed in the workspace.
// The schedule lives in shared memory and is read where it is needed: held in registers it
// would crowd the k loop's own.
enum { SK_TILES_X, SK_K_TILES, SK_DP_TILES, SK_Q, SK_R, SK_DP_NEXT, SK_NEXT, SK_END, SK_TILE, SK_K_BEGIN, SK_K_END, SK_LAST, SK_FIELDS };
__shared__ int stream_k[SK_FIELDS];
if (tid == 0) {
{%- for (name, value) in extents %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    const int tiles = {{ tiles }};
    const int k_tiles = {{ k_tiles }};
    const int blocks = gridDim.x;
    const int dp_tiles = k_tiles == 0 || tiles % blocks == 0 ? tiles : max(tiles / blocks - 1, 0) * blocks;
    // block g takes q + (g < r) of the split tiles' k-tiles, from g · q + min(g, r) (the launch
    // checks that tiles × k_tiles fits an int)
    const int split = (tiles - dp_tiles) * k_tiles;
    stream_k[SK_TILES_X] = tiles_x;
    stream_k[SK_K_TILES] = k_tiles;
    stream_k[SK_DP_TILES] = dp_tiles;
    stream_k[SK_Q] = split / blocks;
    stream_k[SK_R] = split % blocks;
    stream_k[SK_DP_NEXT] = blockIdx.x;
    stream_k[SK_NEXT] = blockIdx.x * (split / blocks) + min((int)blockIdx.x, split % blocks);
    stream_k[SK_END] = stream_k[SK_NEXT] + split / blocks + ((int)blockIdx.x < split % blocks ? 1 : 0);
}
