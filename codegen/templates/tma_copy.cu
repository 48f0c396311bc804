// {{ dsl }}: {{ boxes }} box{% if boxes != 1 %}es{% endif %} of {{ box_rows }} × {{ box_cols }} ({{ box_bytes }} B{% if boxes != 1 %} each{% endif %}) by TMA through
// {{ map }}; the hardware writes the {{ swizzle }}-byte swizzle and zero-fills what lies outside {{ tensor }}
{%- if multicast && slices > 1 %}
// — the same tile for every block of the cluster, each panel in {{ slices }} slices of {{ box_rows }} rows: each block
// copies its rank's slice of every panel, multicast into the stage of all of them
{%- else if multicast %}
// — the same tile for every block of the cluster: each block copies every CLUSTER_BLOCKS-th box
// from its rank on, multicast into the stage of all of them
{%- endif %}
{
{%- for (name, value) in origins %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    #pragma unroll
{%- if multicast && slices > 1 %}
    for (int panel = 0; panel < {{ boxes }}; ++panel) {
        tessera_tma_load_multicast(&{{ destination }}[panel][cluster_rank * {{ box_rows }}][0], &{{ map }}, {{ col0 }} + panel * {{ box_cols }}, {{ row0 }} + cluster_rank * {{ box_rows }}, {{ barrier }}, (1 << CLUSTER_BLOCKS) - 1);
    }
{%- else if multicast %}
    for (int panel = cluster_rank; panel < {{ boxes }}; panel += CLUSTER_BLOCKS) {
        tessera_tma_load_multicast(&{{ destination }}[panel][0][0], &{{ map }}, {{ col0 }} + panel * {{ box_cols }}, {{ row0 }}, {{ barrier }}, (1 << CLUSTER_BLOCKS) - 1);
    }
{%- else %}
    for (int panel = 0; panel < {{ boxes }}; ++panel) {
{%- match batch %}
{%- when Some with (batch) %}
        tessera_tma_load_3d(&{{ destination }}[panel][0][0], &{{ map }}, {{ col0 }} + panel * {{ box_cols }}, {{ row0 }}, {{ batch }}, {{ barrier }});
{%- when None %}
        tessera_tma_load(&{{ destination }}[panel][0][0], &{{ map }}, {{ col0 }} + panel * {{ box_cols }}, {{ row0 }}, {{ barrier }});
{%- endmatch %}
    }
{%- endif %}
}
