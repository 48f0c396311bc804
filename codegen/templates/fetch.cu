// {{ dsl }}: fetch {{ what }} into registers
{
    constexpr int ROWS = {{ rows }};
    constexpr int COLS = {{ cols }};
    constexpr int STEPS = ROWS * COLS / (THREADS * VECTOR);
{%- for (name, value) in origins %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    if ({{ whole_tile }}) {
        #pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            const int item = step * THREADS + tid;
            const int row = {{ row_of_item }};
            const int col = {{ col_of_item }};
            {{ staged }}[step] = {{ load }};
        }
    } else {
        // a tile on the edge: elements outside the tensor are zero
        #pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            const int item = step * THREADS + tid;
            const int row = {{ row_of_item }};
            const int col = {{ col_of_item }};
            {{ staged }}[step] = {{ zero }};
{%- for line in guarded_load %}
            {{ line }}
{%- endfor %}
        }
    }
}
