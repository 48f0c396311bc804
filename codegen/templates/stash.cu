// {{ dsl }}: store the fetched tile to {{ buffer }}[{{ stage }}]
{
    constexpr int ROWS = {{ rows }};
    constexpr int COLS = {{ cols }};
    constexpr int STEPS = ROWS * COLS / (THREADS * VECTOR);
    #pragma unroll
    for (int step = 0; step < STEPS; ++step) {
        const int item = step * THREADS + tid;
        const int row = {{ row_of_item }};
        const int col = {{ col_of_item }};
{%- for line in store %}
        {{ line }}
{%- endfor %}
    }
}
