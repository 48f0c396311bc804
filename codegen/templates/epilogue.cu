// {{ dsl }}: each thread stores its {{ thread_rows }} × {{ thread_cols }} values
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
    #pragma unroll
    for (int i = 0; i < {{ thread_rows }}; ++i) {
        const int row = {{ row_of_value }};
{%- if element_map.is_some() %}
        if (whole_tile) {
            // the row's values mapped before its stores: their loads issue together (one
            // row at a time keeps the temporaries few)
            #pragma unroll
            for (int j = 0; j < {{ thread_cols }}; ++j) {
                const int col = {{ col_of_value }};
                {{ acc }}[i][j] = element_map({{ acc }}[i][j], {{ row_origin }} + row, {{ col_origin }} + col);
            }
        }
{%- endif %}
        #pragma unroll
        for (int j = 0; j < {{ thread_cols }}; j += VECTOR) {
            const int col = {{ col_of_value }};
            if (whole_tile) {
{%- for line in fast %}
                {{ line }}
{%- endfor %}
            } else {
                // a tile on the edge: each element bounds-checked
{%- for line in edge %}
                {{ line }}
{%- endfor %}
            }
        }
    }
}
