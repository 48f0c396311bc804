// {{ dsl }}: a warp-specialised {{ stages }}-stage pipeline — {{ producers }} more threads
// (tid ≥ THREADS) only copy: tiles {{ var }} .. {{ var }} + {{ ahead }} travel by cp.async into a ring of
// shared stages, each stage's landing counted on an mbarrier; the block's THREADS threads only
// wait, read shared memory and compute, and free each stage on a second mbarrier. No barrier
// stops all threads per tile, and no copy sits between the FFMAs.
{
    constexpr int STAGES = {{ stages }};
    constexpr int PRODUCERS = {{ producers }};
    const int {{ var }}_tiles = {{ count }};
    __shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];
    if (tid == 0) {
        for (int stage = 0; stage < STAGES; ++stage) {
            tessera_mbarrier_init(&tessera_full[stage], PRODUCERS);
            tessera_mbarrier_init(&tessera_free[stage], THREADS / 32);
        }
        tessera_mbarrier_init_fence();
    }
    __syncthreads();
    if (tid >= THREADS) {
        // the producers need few registers: {{ producer_registers }} each leaves {{ compute_registers }} to every compute thread
        tessera_registers_down<{{ producer_registers }}>();
        for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}) {
            const int stage = {{ var }} % STAGES;
            // the stage is free once every compute warp is done with tile {{ var }} - STAGES
            if ({{ var }} >= STAGES) {
                tessera_mbarrier_wait(&tessera_free[stage], ({{ var }} / STAGES - 1) & 1);
            }
            // each producer does the copies of THREADS / PRODUCERS compute threads
            for (int tid = threadIdx.x - THREADS; tid < THREADS; tid += PRODUCERS) {
{%- for line in declarations %}
                {{ line }}
{%- endfor %}
{%- for block in copies %}
{{ block }}
{%- endfor %}
            }
            // the stage is full when this producer's copies (and every other's) have landed
            tessera_async_arrive_on(&tessera_full[stage]);
        }
        return;
    }
    tessera_registers_up<{{ compute_registers }}>();
    for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}) {
        const int stage = {{ var }} % STAGES;
        tessera_mbarrier_wait(&tessera_full[stage], ({{ var }} / STAGES) & 1);
{%- for block in compute %}
{{ block }}
{%- endfor %}
        // this warp's reads of the stage are done
        __syncwarp();
        if (tid % 32 == 0) {
            tessera_mbarrier_arrive(&tessera_free[stage]);
        }
    }
}
