#pragma unroll
for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
    #pragma unroll
    for (int ni = 0; ni < {{ warp_cols }} / 8; ++ni) {
        #pragma unroll
        for (int half = 0; half < 2; ++half) {
            // rows lane / 4 and lane / 4 + 8 of the 16 × 8 tile, columns 2 · (lane % 4) and the next
            const int row = warp_row0 + mi * {{ m_tile_rows }} + half * 8 + lane / 4;
            const int col = warp_col0 + ni * 8 + lane % 4 * 2;
            float value0 = {{ acc }}[mi][ni][half * 2];
            float value1 = {{ acc }}[mi][ni][half * 2 + 1];
{%- for line in scale %}
            {{ line }}
{%- endfor %}
            if (whole_tile && VECTOR >= 2) {
{%- for line in pair_store %}
                {{ line }}
{%- endfor %}
            } else {
                // a tile on the edge, or rows not 8-byte aligned: each element on its own
{%- for line in edge_store %}
                {{ line }}
{%- endfor %}
            }
        }
    }
}
