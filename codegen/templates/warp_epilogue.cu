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
{%- if let Some(wide) = wide_store %}
    if (whole_tile && VECTOR >= {{ wide.vector }}) {
{%- for line in wide.why %}
        // {{ line }}
{%- endfor %}
        #pragma unroll
        for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
            #pragma unroll
            for (int half = 0; half < 2; ++half) {
{%- for line in wide.row_loads %}
                {{ line }}
{%- endfor %}
                #pragma unroll
                for (int group = 0; group < {{ warp_cols }} / {{ wide.chunks * 8 }}; ++group) {
{%- for line in wide.preloads %}
                    {{ line }}
{%- endfor %}
                    {{ wide.pair_type }} pairs[{{ wide.chunks }}];
                    #pragma unroll
                    for (int chunk = 0; chunk < {{ wide.chunks }}; ++chunk) {
                        const int ni = group * {{ wide.chunks }} + chunk;
                        const int row = warp_row0 + mi * {{ m_tile_rows }} + half * 8 + lane / 4;
                        const int col = warp_col0 + ni * 8 + lane % 4 * 2;
                        float value0 = {{ acc }}[mi][ni][half * 2];
                        float value1 = {{ acc }}[mi][ni][half * 2 + 1];
{%- for line in scale %}
                        {{ line }}
{%- endfor %}
{%- for line in wide.pair_values %}
                        {{ line }}
{%- endfor %}
                        pairs[chunk] = {{ wide.pair }};
                    }
                    {{ wide.exchange }}
                    const int row = warp_row0 + mi * {{ m_tile_rows }} + half * 8 + lane / 4;
                    const int col = warp_col0 + {{ wide.column }};
                    *reinterpret_cast<{{ wide.store_type }}*>(&{{ wide.target }}) = {{ wide.stored }};
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
