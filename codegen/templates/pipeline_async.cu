// {{ dsl }}: a {{ stages }}-stage cp.async pipeline — tiles {{ var }} + 1 .. {{ var }} + {{ ahead }} travel
// from global to shared memory (no registers on the way) while tile {{ var }} is computed{% if in_flight > 0 %}
// and tile {{ var }} - 1's wgmma finishes (its stage is refilled a tile later){% endif %}; one
// barrier per tile
{
    constexpr int STAGES = {{ stages }};
    constexpr int AHEAD = {{ ahead }};  // tiles in flight ahead of the one computed
{%- if let Some(first) = first %}
    // this unit's k-tiles: {{ first }} .. {{ count }}
    const int {{ var }}_first = {{ first }};
{%- endif %}
    const int {{ var }}_tiles = {{ count }};
{%- for line in declarations %}
    {{ line }}
{%- endfor %}
{%- if first.is_some() %}
    // prologue: the first AHEAD tiles in flight, one commit group each (empty past the end)
    #pragma unroll
    for (int stage = 0; stage < AHEAD; ++stage) {
        const int {{ var }} = {{ var }}_first + stage;
        if ({{ var }} < {{ var }}_tiles) {
{%- else %}
    // prologue: tiles 0 .. AHEAD - 1 in flight, one commit group each (empty past the end)
    #pragma unroll
    for (int {{ var }} = 0; {{ var }} < AHEAD; ++{{ var }}) {
        if ({{ var }} < {{ var }}_tiles) {
            const int stage = {{ var }};
{%- endif %}
{%- for block in prologue %}
{{ block }}
{%- endfor %}
        }
        tessera_async_commit();
    }
{%- if first.is_some() %}
    for (int {{ var }} = {{ var }}_first; {{ var }} < {{ var }}_tiles; ++{{ var }}) {
        const int stage = ({{ var }} - {{ var }}_first) % STAGES;
{%- else %}
    for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}) {
        const int stage = {{ var }} % STAGES;
{%- endif %}
        // tile {{ var }} has landed: this thread's copies (all but the newest AHEAD - 1 groups),
        // then every thread's; past this barrier no one reads the stage tile {{ var }} - {{ in_flight + 1 }} used
        tessera_async_wait<AHEAD - 1>();
{%- if proxy_fence %}
        tessera_fence_proxy_async();  // visible to wgmma, which reads through the async proxy
{%- endif %}
        __syncthreads();
{%- if spread %}
        // refill that stage with tile {{ var }} + AHEAD, in parts: one at the start of each trip of
        // the mma's k loop, so the copies queue behind the FFMAs instead of all at once
        const bool refill = {{ var }} + AHEAD < {{ var }}_tiles;
        const int stage_ahead = ({{ var }}{% if first.is_some() %} - {{ var }}_first{% endif %} + AHEAD) % STAGES;
{%- for block in refill %}
{{ block }}
{%- endfor %}
{%- for block in compute %}
{{ block }}
{%- endfor %}
        tessera_async_commit();
{%- else %}
        if ({{ var }} + AHEAD < {{ var }}_tiles) {
            // refill that stage with tile {{ var }} + AHEAD
            const int stage_ahead = ({{ var }}{% if first.is_some() %} - {{ var }}_first{% endif %} + AHEAD) % STAGES;
{%- for block in refill %}
{{ block }}
{%- endfor %}
        }
        tessera_async_commit();
{%- for block in compute %}
{{ block }}
{%- endfor %}
{%- endif %}
    }
{%- for line in drain %}
    {{ line }}
{%- endfor %}
    // nothing left in flight, and every thread is done with the buffers
    tessera_async_wait<0>();
    __syncthreads();
}
