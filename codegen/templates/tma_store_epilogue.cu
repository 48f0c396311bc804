// {{ dsl }}: each warp stages its 16 rows of the tile in shared memory, one 128-byte panel ({{ panel_cols }}
// columns) at a time in the 128-byte swizzle, and one lane stores the panel by TMA through {{ map }}:
// the copy engine writes {{ tensor }} (nothing outside it) while the warp goes on. Two staging buffers a
// warp: a panel's store reads one while the next panel is staged in the other.
{
{%- for (name, value) in origins %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    const int lane = threadIdx.x % 32;
    unsigned char (&staging)[2][{{ stage_bytes }}] = {{ staging }}[threadIdx.x / 32];
    #pragma unroll  // whole panels: the accumulators are indexed by constants
    for (int panel = 0; panel < {{ warp_cols }} / {{ panel_cols }}; ++panel, ++tma_stores) {
        unsigned char* buffer = staging[tma_stores % 2];
        // the store that read this buffer two panels ago is done with it
        if (lane == 0) {
            tessera_tma_store_wait_read<1>();
        }
        __syncwarp();
        #pragma unroll
        for (int nj = 0; nj < {{ panel_cols }} / 8; ++nj) {
            const int ni = panel * ({{ panel_cols }} / 8) + nj;
            #pragma unroll
            for (int half = 0; half < 2; ++half) {
                // row of the warp's 16, column of the panel's
                const int row = lane / 4 + half * 8, col = nj * 8 + lane % 4 * 2;
                float value0 = {{ acc }}[0][ni][half * 2], value1 = {{ acc }}[0][ni][half * 2 + 1];
{%- for line in values %}
                {{ line }}
{%- endfor %}
                const int byte = col * {{ element_bytes }};
                *reinterpret_cast<{{ pair_type }}*>(buffer + row * 128 + ((byte / 16) ^ (row % 8)) * 16 + byte % 16) = out;
            }
        }
        tessera_fence_proxy_async();  // the staged values visible to the copy engine
        __syncwarp();
        if (lane == 0) {
            tessera_tma_store(&{{ map }}, {{ col0 }} + warp_col0 + panel * {{ panel_cols }}, {{ row0 }} + warp_row0, buffer);
            tessera_tma_store_commit();
        }
    }
}
