// {{ dsl }}: {{ steps }} × {{ vector_type }} per thread
{
    constexpr int STEPS = {{ extent }} / (THREADS * VECTOR);
    const int tile_start = {{ tile_start }};
    if ({{ bound }} - tile_start >= {{ extent }}) {
        // whole tile: {{ vector_bits }}-bit accesses, no bounds checks
        {{ vector_type }} staged[STEPS];
        #pragma unroll
        for (int step = 0; step < STEPS; ++step) {
{%- if vectorized %}
            staged[step] = reinterpret_cast<const {{ vector_type }}*>({{ src }} + tile_start)[step * THREADS + tid];
{%- else %}
            staged[step] = {{ src }}[tile_start + step * THREADS + tid];
{%- endif %}
        }
        #pragma unroll
        for (int step = 0; step < STEPS; ++step) {
{%- if vectorized %}
            reinterpret_cast<{{ vector_type }}*>({{ dst }} + tile_start)[step * THREADS + tid] = staged[step];
{%- else %}
            {{ dst }}[tile_start + step * THREADS + tid] = staged[step];
{%- endif %}
        }
    } else {
        // the last, partial tile: one element per access, bounds-checked
        for (int i = tile_start + tid; i < {{ bound }}; i += THREADS) {
            {{ dst }}[i] = {{ src }}[i];
        }
    }
}
