{{ vector_type }} staged[STEPS] = {};
#pragma unroll
for (int step = 0; step < STEPS; ++step) {
    const int item = step * THREADS + tid;
    const int row = {{ row_of_item }};
    const int col = {{ col_of_item }};
{%- for line in load %}
    {{ line }}
{%- endfor %}
}
#pragma unroll
for (int step = 0; step < STEPS; ++step) {
    const int item = step * THREADS + tid;
    const int row = {{ row_of_item }};
    const int col = {{ col_of_item }};
{%- for line in store %}
    {{ line }}
{%- endfor %}
}
