// {{ dsl }}: {{ what }} → {{ buffer }} by cp.async, {{ bytes }} B per copy
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
{%- for line in whole %}
            {{ line }}
{%- endfor %}
        }
    } else {
        // a tile on the edge: a copy from outside the tensor reads nothing and zero-fills
        #pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            const int item = step * THREADS + tid;
            const int row = {{ row_of_item }};
            const int col = {{ col_of_item }};
{%- for line in edge %}
            {{ line }}
{%- endfor %}
        }
    }
}
