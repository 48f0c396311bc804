// {{ dsl }}: {{ k_name }} steps of {{ thread_rows }} × {{ thread_cols }} outer products; step kk + 1's
// values of a and b are read from shared memory into the other register set while step kk's
// are multiplied
{
    {{ element }} a_frag[2][{{ thread_rows }}];
    {{ element }} b_frag[2][{{ thread_cols }}];
{%- for line in first_loads %}
    {{ line }}
{%- endfor %}
    #pragma unroll
    for (int kk = 0; kk < {{ k_name }}; ++kk) {
        if (kk + 1 < {{ k_name }}) {
{%- for line in next_loads %}
            {{ line }}
{%- endfor %}
        }
        #pragma unroll
        for (int i = 0; i < {{ thread_rows }}; ++i) {
            #pragma unroll
            for (int j = 0; j < {{ thread_cols }}; ++j) {
                {{ acc }}[i][j] += a_frag[kk % 2][i] * b_frag[kk % 2][j];
            }
        }
    }
}
