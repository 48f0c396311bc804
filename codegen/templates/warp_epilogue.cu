// {{ dsl }}: each lane stores its values of its warp's tile, two neighbouring columns at a time
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
{%- if let Some((rows, cols)) = lane_bounds %}
    // rows and columns of the tensor from this lane's first value on
    const int rows_left = {{ rows }};
    const int cols_left = {{ cols }};
{%- endif %}
{%- if let Some(quad) = quad_store %}
    if (whole_tile && VECTOR >= 8) {
        // 16-bit values in rows 16-byte aligned: each row's four lanes trade their pairs of four
        // chunks and store eight neighbouring columns each, 16 bytes a lane
        #pragma unroll
        for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
            #pragma unroll
            for (int half = 0; half < 2; ++half) {
                #pragma unroll
                for (int group = 0; group < {{ warp_cols }} / 32; ++group) {
                    unsigned pairs[4];
                    #pragma unroll
                    for (int chunk = 0; chunk < 4; ++chunk) {
                        const int ni = group * 4 + chunk;
                        const int row = warp_row0 + mi * 16 + half * 8 + lane / 4;
                        const int col = warp_col0 + ni * 8 + lane % 4 * 2;
                        float value0 = {{ acc }}[mi][ni][half * 2];
                        float value1 = {{ acc }}[mi][ni][half * 2 + 1];
{%- for line in scale %}
                        {{ line }}
{%- endfor %}
{%- for line in quad.pair_values %}
                        {{ line }}
{%- endfor %}
                        pairs[chunk] = tessera_pair_bits(out);
                    }
                    unsigned columns[4];
                    tessera_quad_transpose(pairs, columns);
                    const int row = warp_row0 + mi * 16 + half * 8 + lane / 4;
                    const int col = warp_col0 + (group * 4 + lane % 4) * 8;
                    *reinterpret_cast<uint4*>(&{{ quad.target }}) = make_uint4(columns[0], columns[1], columns[2], columns[3]);
                }
            }
        }
    } else {
{{ pairs }}
    }
{%- else %}
{{ pairs }}
{%- endif %}
}
