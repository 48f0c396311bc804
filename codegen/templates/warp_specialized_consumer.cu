{%- if consumers > 1 %}
const int {{ var }}_tiles = {{ count }};  // the same for every tile (the groups count the ring by it)
int drained = consumer * {{ var }}_tiles;  // k-tiles of the ring before this group's next one
int turns = 0;  // tiles this group has multiplied
{%- if tma_store %}
int tma_stores = 0;  // panels this warp has handed to TMA: staging buffer tma_stores % 2 is next
{%- endif %}
for (int {{ turn }} = {{ first_tile }} + consumer * {{ tile_step }}; {{ turn }} < tiles; {{ turn }} += CONSUMERS * {{ tile_step }}) {
{%- else %}
int drained = 0;  // k-tiles this block's compute threads have used
{%- if tma_store %}
int tma_stores = 0;  // panels this warp has handed to TMA: staging buffer tma_stores % 2 is next
{%- endif %}
{%- if tile_copies %}
int tiles_done = 0;  // tiles this block's compute threads have finished
{%- endif %}
{%- if dynamic %}
for (int turn = 0;; ++turn) {
{{ tile_take|indent(4, true) }}
{%- else %}
for (int {{ turn }} = {{ first_tile }}; {{ turn }} < tiles; {{ turn }} += {{ tile_step }}) {
{%- endif %}
{%- endif %}
{%- for (var, value) in bindings %}
    const int {{ var }} = {{ value }};
{%- endfor %}
{%- for block in before %}
{{ block }}
{%- endfor %}
{%- if consumers == 1 %}
    const int {{ var }}_tiles = {{ count }};
{%- endif %}
{%- for line in loop_declarations %}
    {{ line }}
{%- endfor %}
{%- if consumers > 1 %}
    // this group's turn: the group before it has issued its tile's multiplications
    if (consumer > 0 || turns > 0) {
        tessera_mbarrier_wait(&tessera_turn[consumer], (consumer > 0 ? turns : turns - 1) & 1);
    }
{%- endif %}
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
{%- if cluster %}
        if (tid % 32 < CLUSTER_BLOCKS) {
            tessera_mbarrier_arrive_in(&tessera_free[stage], tid % 32);  // lane r: in the cluster's block r
        }
{%- else %}
        if (tid % 32 == 0) {
            tessera_mbarrier_arrive(&tessera_free[stage]);
        }
{%- endif %}
{%- else %}
        // the previous k-tile's wgmma is done (this one's runs on): free its stage
        __syncwarp();
{%- if cluster %}
        if ({{ var }} > 0 && tid % 32 < CLUSTER_BLOCKS) {
            tessera_mbarrier_arrive_in(&tessera_free[(drained - 1) % STAGES], tid % 32);  // lane r: in block r
        }
{%- else %}
        if ({{ var }} > 0 && tid % 32 == 0) {
            tessera_mbarrier_arrive(&tessera_free[(drained - 1) % STAGES]);
        }
{%- endif %}
{%- endif %}
    }
{%- if consumers > 1 %}
    // every stage of this tile has been waited for: the next group may multiply
    __syncwarp();
    if (tid % 32 == 0) {
        tessera_mbarrier_arrive(&tessera_turn[(consumer + 1) % CONSUMERS]);
    }
{%- endif %}
{%- if tile_copies && tile_freed == "after_loop" %}
{%- include "tile_freed.cu" %}
{%- endif %}
{%- if in_flight > 0 %}
{%- for line in drain %}
    {{ line }}
{%- endfor %}
    // and the tile's last stage with it
    __syncwarp();
{%- if cluster %}
    if ({{ var }}_tiles > 0 && tid % 32 < CLUSTER_BLOCKS) {
        tessera_mbarrier_arrive_in(&tessera_free[(drained - 1) % STAGES], tid % 32);  // lane r: in block r
    }
{%- else %}
    if ({{ var }}_tiles > 0 && tid % 32 == 0) {
        tessera_mbarrier_arrive(&tessera_free[(drained - 1) % STAGES]);
    }
{%- endif %}
{%- endif %}
{%- if tile_copies && tile_freed == "after_drain" %}
{%- include "tile_freed.cu" %}
{%- endif %}
{%- for block in after %}
{{ block }}
{%- endfor %}
{%- if tile_copies %}
{%- if tile_freed == "at_tile_end" %}
{%- include "tile_freed.cu" %}
{%- endif %}
    ++tiles_done;
{%- endif %}
{%- if consumers > 1 %}
    drained += (CONSUMERS - 1) * {{ var }}_tiles;  // the other groups' k-tiles
    ++turns;
{%- endif %}
}
{%- if tma_store %}
// the shared memory this warp's TMA stores read stays until they are done writing
if (tid % 32 == 0) {
    tessera_tma_store_wait<0>();
}
{%- endif %}
