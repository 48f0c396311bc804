// {{ dsl }}: {{ k_name }} steps of {{ thread_rows }} × {{ thread_cols }} outer products
{%- match unroll %}
{%- when Some with (steps) %}, {{ steps }} per trip of a loop
// over them (fewer instructions than the instruction cache holds)
{%- include "mma_overwrite.cu" %}
#pragma unroll 1
for (int k0 = 0; k0 < {{ k_name }}; k0 += {{ steps }}) {
    #pragma unroll
    for (int kk = k0; kk < k0 + {{ steps }}; ++kk) {
        {{ element }} a_frag[{{ thread_rows }}];
        {{ element }} b_frag[{{ thread_cols }}];
{%- for line in loads %}
        {{ line }}
{%- endfor %}
        #pragma unroll
        for (int i = 0; i < {{ thread_rows }}; ++i) {
            #pragma unroll
            for (int j = 0; j < {{ thread_cols }}; ++j) {
                {{ acc }}[i][j] += a_frag[i] * b_frag[j];
            }
        }
    }
}
{%- when None %}
{%- include "mma_overwrite.cu" %}
#pragma unroll
for (int kk = 0; kk < {{ k_name }}; ++kk) {
    {{ element }} a_frag[{{ thread_rows }}];
    {{ element }} b_frag[{{ thread_cols }}];
{%- for line in loads %}
    {{ line }}
{%- endfor %}
    #pragma unroll
    for (int i = 0; i < {{ thread_rows }}; ++i) {
        #pragma unroll
        for (int j = 0; j < {{ thread_cols }}; ++j) {
            {{ acc }}[i][j] += a_frag[i] * b_frag[j];
        }
    }
}
{%- endmatch %}
