// {{ dsl }}: {{ steps }} × {{ vector_type }} per thread{% if column_major %}, consecutive threads down a column{% endif %}
{
    constexpr int ROWS = {{ rows }};
    constexpr int COLS = {{ cols }};
    constexpr int STEPS = ROWS * COLS / (THREADS * VECTOR);
{%- for (name, value) in origins %}
    const int {{ name }} = {{ value }};
{%- endfor %}
{%- if let Some(whole_tile) = whole_tile %}
    if ({{ whole_tile }}) {
        // whole tile: no bounds checks
{{ fast_path }}
    } else {
        // a tile on the edge: the same steps, each element bounds-checked
{{ edge_path }}
    }
{%- else %}
{{ fast_path }}
{%- endif %}
}
