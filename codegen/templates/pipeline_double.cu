// {{ dsl }}: tile {{ var }} + 1 is fetched into registers while tile {{ var }} is computed from
// the other half of the double-buffered shared memory; one barrier per tile
{
    const int {{ var }}_tiles = {{ count }};
{%- for line in staging %}
    {{ line }}
{%- endfor %}
    if ({{ var }}_tiles > 0) {
        // prologue: tile 0 into stage 0
        const int {{ var }} = 0;
        const int stage = 0;
{%- for block in prologue %}
{{ block }}
{%- endfor %}
    }
    __syncthreads();
    for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}) {
        const int stage = {{ var }} & 1;
        if ({{ var }} + 1 < {{ var }}_tiles) {
{%- for block in fetch_next %}
{{ block }}
{%- endfor %}
        }
{%- for block in compute %}
{{ block }}
{%- endfor %}
        if ({{ var }} + 1 < {{ var }}_tiles) {
{%- for block in stash_next %}
{{ block }}
{%- endfor %}
        }
        __syncthreads();
    }
}
