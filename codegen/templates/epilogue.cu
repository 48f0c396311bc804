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
