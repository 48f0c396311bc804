// {{ dsl }}: {{ instruction }}, {{ k_name }} / {{ k_step }} k-steps of
// {{ warp_rows }} / 16 × {{ warp_cols }} / 8 tiles per warp; {{ operands_note }}
{
    const int lane = tid % 32;
{%- if overwrite %}
    // `.overwrite()`: the product replaces what `{{ acc }}` held
    #pragma unroll
    for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
        #pragma unroll
        for (int ni = 0; ni < {{ warp_cols }} / 8; ++ni) {
            #pragma unroll
            for (int v = 0; v < 4; ++v) {
                {{ acc }}[mi][ni][v] = 0.0f;
            }
        }
    }
{%- endif %}
    #pragma unroll
    for (int kk = 0; kk < {{ k_name }}; kk += {{ k_step }}) {
        unsigned a_frag[{{ warp_rows }} / 16][4];
        unsigned b_frag[{{ warp_cols }} / 8][2];
        #pragma unroll
        for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
{%- for line in a_loads %}
            {{ line }}
{%- endfor %}
        }
        #pragma unroll
        for (int ni = 0; ni < {{ warp_cols }} / 8; ni += {{ b_step }}) {
{%- for line in b_loads %}
            {{ line }}
{%- endfor %}
        }
        #pragma unroll
        for (int mi = 0; mi < {{ warp_rows }} / 16; ++mi) {
            #pragma unroll
            for (int ni = 0; ni < {{ warp_cols }} / 8; ++ni) {
                {{ mma_function }}({{ acc }}[mi][ni], a_frag[mi], b_frag[ni]);
            }
        }
    }
}
