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
        // a tile on the edge: element by element, bounds-checked
        for (int item = tid; item < ROWS * COLS; item += THREADS) {
            const int row = item / COLS;
            const int col = item % COLS;
            if ({{ guard }}) {
                {{ guarded_store }}
            }
        }
    }
{%- else %}
{{ fast_path }}
{%- endif %}
}
