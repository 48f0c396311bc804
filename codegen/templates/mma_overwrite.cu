{%- if overwrite %}
// `.overwrite()`: the product replaces what `{{ acc }}` held
#pragma unroll
for (int i = 0; i < {{ thread_rows }}; ++i) {
    #pragma unroll
    for (int j = 0; j < {{ thread_cols }}; ++j) {
        {{ acc }}[i][j] = {{ element }}{};
    }
}
{%- endif %}
