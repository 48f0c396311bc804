// {{ dsl }}: warp-specialised and persistent — the gridDim.x blocks (as many
// as stay resident) take tiles blockIdx.x, blockIdx.x + gridDim.x, ... In each, {{ producers }} more threads
{%- if tma %}
// (tid ≥ THREADS) only copy: one of them issues each k-tile as TMA bulk tensor copies into a ring of
// {{ stages }} shared stages, the bytes that land counted on the stage's mbarrier, running on into the
// block's next tile while this one is finished; the THREADS compute threads only wait, read shared
// memory and multiply, and free each stage on a second mbarrier. No barrier stops the whole block
// per k-tile.
{%- else %}
// (tid ≥ THREADS) only copy: k-tiles travel by cp.async into a ring of {{ stages }} shared stages, each
// stage's landing counted on an mbarrier, running on into the block's next tile while this one
// is finished; the THREADS compute threads only wait, read shared memory and multiply, and free
// each stage on a second mbarrier. No barrier stops the whole block per k-tile.
{%- endif %}
{
    constexpr int STAGES = {{ stages }};
    constexpr int PRODUCERS = {{ producers }};
{%- for (name, value) in extents %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    const int tiles = {{ tiles }};
    const int {{ var }}_tiles = {{ count }};
    __shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];
    if (tid == 0) {
        for (int stage = 0; stage < STAGES; ++stage) {
{%- if tma %}
            tessera_mbarrier_init(&tessera_full[stage], 1);  // the TMA thread's arrival, then the bytes
{%- else %}
            tessera_mbarrier_init(&tessera_full[stage], PRODUCERS);
{%- endif %}
            tessera_mbarrier_init(&tessera_free[stage], THREADS / 32);
        }
        tessera_mbarrier_init_fence();
    }
    __syncthreads();
    if (tid >= THREADS) {
        // the producers need few registers: {{ producer_registers }} each leaves {{ compute_registers }} to every compute thread
        tessera_registers_down<{{ producer_registers }}>();
{%- if tma %}
        // one thread issues every copy; the rest of the warpgroup was only here to give registers back
        if (tid != THREADS) return;
{%- for map in tensor_maps %}
        tessera_tma_prefetch(&{{ map }});
{%- endfor %}
{%- endif %}
        int filled = 0;  // k-tiles this block's producers have issued: stage filled % STAGES
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
{%- for (var, value) in bindings %}
            const int {{ var }} = {{ value }};
{%- endfor %}
            for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}, ++filled) {
                const int stage = filled % STAGES;
                // the stage is free once every compute warp is done with what it held
                if (filled >= STAGES) {
                    tessera_mbarrier_wait(&tessera_free[stage], (filled / STAGES - 1) & 1);
                }
{%- if tma %}
                // the stage is full when this arrival is in and its {{ stage_bytes }} bytes have landed
                tessera_mbarrier_expect_bytes(&tessera_full[stage], {{ stage_bytes }});
{%- for block in copies %}
{{ block }}
{%- endfor %}
{%- else %}
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
{%- endif %}
            }
        }
        return;
    }
    tessera_registers_up<{{ compute_registers }}>();
    int drained = 0;  // k-tiles this block's compute threads have used
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
{%- for (var, value) in bindings %}
        const int {{ var }} = {{ value }};
{%- endfor %}
{{ fragment }}
        for (int {{ var }} = 0; {{ var }} < {{ var }}_tiles; ++{{ var }}, ++drained) {
            const int stage = drained % STAGES;
            tessera_mbarrier_wait(&tessera_full[stage], (drained / STAGES) & 1);
{%- if proxy_fence %}
            tessera_fence_proxy_async();  // the landed tile visible to wgmma, which reads through the async proxy
{%- endif %}
{%- for block in compute %}
{{ block }}
{%- endfor %}
{%- if in_flight == 0 %}
            // this warp's reads of the stage are done
            __syncwarp();
            if (tid % 32 == 0) {
                tessera_mbarrier_arrive(&tessera_free[stage]);
            }
{%- else %}
            // the previous k-tile's wgmma is done (this one's runs on): free its stage
            __syncwarp();
            if ({{ var }} > 0 && tid % 32 == 0) {
                tessera_mbarrier_arrive(&tessera_free[(drained - 1) % STAGES]);
            }
{%- endif %}
        }
{%- if in_flight > 0 %}
{%- for line in drain %}
        {{ line }}
{%- endfor %}
        // and the tile's last stage with it
        __syncwarp();
        if ({{ var }}_tiles > 0 && tid % 32 == 0) {
            tessera_mbarrier_arrive(&tessera_free[(drained - 1) % STAGES]);
        }
{%- endif %}
{%- for block in epilogue %}
{{ block }}
{%- endfor %}
    }
}
