// {{ dsl }}: {{ k_name }} steps of {{ thread_rows }} × {{ thread_cols }} outer products; step kk + 1's
// values of a and b are read from shared memory into the other register set while step kk's
// are multiplied
{%- match unroll %}
{%- when Some with (steps) %}; {{ steps }} steps per trip of a loop over them (fewer
// instructions than the instruction cache holds)
{%- include "mma_overwrite.cu" %}
{
    {{ element }} a_frag[2][{{ thread_rows }}];
    {{ element }} b_frag[2][{{ thread_cols }}];
{%- for line in first_loads %}
    {{ line }}
{%- endfor %}
    #pragma unroll 1
    for (int k0 = 0; k0 < {{ k_name }}; k0 += {{ steps }}) {
{%- for line in each_trip %}
        {{ line }}
{%- endfor %}
        #pragma unroll
        for (int step = 0; step < {{ steps }}; ++step) {
            const int kk = k0 + step;
            if (step + 1 < {{ steps }} || k0 + {{ steps }} < {{ k_name }}) {
{%- for line in next_loads %}
                {{ line }}
{%- endfor %}
            }
            #pragma unroll
            for (int i = 0; i < {{ thread_rows }}; ++i) {
                #pragma unroll
                for (int jj = 0; jj < {{ thread_cols }}; ++jj) {
                    // serpentine: odd rows run right to left, so each row change reuses a b value
                    const int j = i % 2 == 0 ? jj : {{ thread_cols }} - 1 - jj;
                    {{ acc }}[i][j] += a_frag[step % 2][i] * b_frag[step % 2][j];
                }
            }
        }
    }
}
{%- when None %}
{%- include "mma_overwrite.cu" %}
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
            for (int jj = 0; jj < {{ thread_cols }}; ++jj) {
                // serpentine: odd rows run right to left, so each row change reuses a b value
                const int j = i % 2 == 0 ? jj : {{ thread_cols }} - 1 - jj;
                {{ acc }}[i][j] += a_frag[kk % 2][i] * b_frag[kk % 2][j];
            }
        }
    }
}
{%- endmatch %}
