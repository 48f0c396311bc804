// {{ dsl }}: the fragment holds the tile transposed, so its row r, column c is the tile's
// row c, column r: each lane stores its values one at a time, the eight lanes of one lane % 4
// (rows lane / 4 of the fragment) filling 32 consecutive bytes of one of the tile's rows
{
{%- for (name, value) in origins %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    const bool whole_tile = {{ whole_tile }};
{%- if let Some(map) = element_map %}
{%- for line in map.lines() %}
    {{ line }}
{%- endfor %}
{%- endif %}
    const int lane = tid % 32;
    #pragma unroll
    for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
        #pragma unroll
        for (int ni = 0; ni < {{ warp_cols }} / 8; ++ni) {
            #pragma unroll
            for (int v = 0; v < 4; ++v) {
                // value v of the 16 × 8 tile: its row lane / 4 (+ 8) is the tile's column, its
                // column 2 · (lane % 4) (+ 1) the tile's row
                const int row = warp_col0 + ni * 8 + lane % 4 * 2 + v % 2;
                const int col = warp_row0 + mi * {{ m_tile_rows }} + v / 2 * 8 + lane / 4;
                // (a `.map` reads other tensors at the value's place: inside the tensor only)
                if (whole_tile || ({{ in_bounds }})) {
                    float value = {{ value }};
{%- for line in scale %}
                    {{ line }}
{%- endfor %}
{%- for line in store %}
                    {{ line }}
{%- endfor %}
                }
            }
        }
    }
}
