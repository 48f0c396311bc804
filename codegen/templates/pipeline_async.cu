// {{ dsl }}: a {{ stages }}-stage cp.async pipeline — tiles {{ var }} + 1 .. {{ var }} + {{ ahead }} travel
// from global to shared memory (no registers on the way) while tile {{ var }} is computed; one
// barrier per tile
{
    constexpr int STAGES = {{ stages }};
{%- if let Some(first) = first %}
    // this unit's k-tiles: {{ first }} .. {{ count }}
    const int {{ var }}_first = {{ first }};
{%- endif %}
    const int {{ var }}_tiles = {{ count }};
{%- for line in declarations %}
    {{ line }}
{%- endfor %}
{%- if first.is_some() %}
    // prologue: the first STAGES - 1 tiles in flight, one commit group each (empty past the end)
    #pragma unroll
    for (int stage = 0; stage < STAGES - 1; ++stage) {
        const int {{ var }} = {{ var }}_first + stage;
        if ({{ var }} < {{ var }}_tiles) {
{%- else %}
    // prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty past the end)
    #pragma unroll
    for (int {{ var }} = 0; {{ var }} < STAGES - 1; ++{{ var }}) {
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
        // tile {{ var }} has landed: this thread's copies (all but the newest STAGES - 2 groups),
        // then every thread's; past this barrier no one reads the stage tile {{ var }} - 1 used
        tessera_async_wait<STAGES - 2>();
{%- if proxy_fence %}
        tessera_fence_proxy_async();  // visible to wgmma, which reads through the async proxy
{%- endif %}
        __syncthreads();
{%- if spread %}
        // refill that stage with tile {{ var }} + STAGES - 1, in parts: one at the start of each trip of
        // the mma's k loop, so the copies queue behind the FFMAs instead of all at once
        const bool refill = {{ var }} + STAGES - 1 < {{ var }}_tiles;
        const int stage_ahead = ({{ var }}{% if first.is_some() %} - {{ var }}_first{% endif %} + STAGES - 1) % STAGES;
{%- for block in refill %}
{{ block }}
{%- endfor %}
{%- for block in compute %}
{{ block }}
{%- endfor %}
        tessera_async_commit();
{%- else %}
        if ({{ var }} + STAGES - 1 < {{ var }}_tiles) {
            // refill that stage with tile {{ var }} + STAGES - 1
            const int stage_ahead = ({{ var }}{% if first.is_some() %} - {{ var }}_first{% endif %} + STAGES - 1) % STAGES;
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
    // nothing left in flight, and every thread is done with the buffers
    tessera_async_wait<0>();
    __syncthreads();
}
