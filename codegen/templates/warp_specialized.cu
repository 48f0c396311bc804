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
{%- if let Some(blocks) = cluster_blocks %}
// The blocks run in clusters of {{ blocks }}, each cluster taking cluster tiles — {{ blocks }} neighbouring tiles,
// block r the r-th — blockIdx.x / {{ blocks }}, + gridDim.x / {{ blocks }}, ... A tile the cluster's blocks share
// is copied once: each block's producer copies a share of its boxes, multicast into every
// block's stage, so a stage is free once the compute warps of every block are done with it.
{%- endif %}
{%- if turn == "turn" %}
// In zigzag (`.zigzag()`): the blocks take every other round of tiles from its end — a round's
// first block its last tile — so one that took a long tile in a round takes a short one next.
{%- endif %}
{%- if dynamic %}
// Dynamically (`.dynamic()`): each block's first tile is blockIdx.x, its next ones come from a
// counter the launch zeroes (gridDim.x + the count taken before), in the grid's order, so a
// block takes as many tiles as it gets through. A producer takes them and hands them to the
// block's other warps through two slots in shared memory.
{%- endif %}
{
    constexpr int STAGES = {{ stages }};
{%- if let Some(blocks) = cluster_blocks %}
    constexpr int CLUSTER_BLOCKS = {{ blocks }};
    const int cluster_rank = tessera_cluster_rank();
{%- endif %}
{%- if !tma %}
    constexpr int PRODUCERS = {{ producers }};
{%- endif %}
{%- if consumers > 1 %}
    constexpr int CONSUMERS = {{ consumers }};
{%- endif %}
{%- for (name, value) in extents %}
    const int {{ name }} = {{ value }};
{%- endfor %}
    const int tiles = {{ tiles }};
    __shared__ tessera_mbarrier tessera_full[STAGES], tessera_free[STAGES];
{%- if !tile_copies.is_empty() %}
    // each tile's own buffers: filled once a tile by the producers, freed by every compute warp
    __shared__ tessera_mbarrier tessera_tile_full, tessera_tile_free;
{%- endif %}
{%- if consumers > 1 %}
    __shared__ tessera_mbarrier tessera_turn[CONSUMERS];
{%- endif %}
{%- if dynamic %}
    // the tiles taken, handed over in two slots: one is full when the producer that took its tile
    // has arrived, free again once every warp that reads it has
    __shared__ int tessera_tile_slot[2];
    __shared__ tessera_mbarrier tessera_tile_slot_full[2], tessera_tile_slot_free[2];
{%- endif %}
    if (tid == 0) {
        for (int stage = 0; stage < STAGES; ++stage) {
{%- if tma %}
            tessera_mbarrier_init(&tessera_full[stage], 1);  // the TMA thread's arrival, then the bytes
{%- else %}
            tessera_mbarrier_init(&tessera_full[stage], PRODUCERS);
{%- endif %}
{%- if consumers > 1 && cluster_blocks.is_some() %}
            // the warps of the group that used it, in every block of the cluster
            tessera_mbarrier_init(&tessera_free[stage], THREADS / CONSUMERS / 32 * CLUSTER_BLOCKS);
{%- else if consumers > 1 %}
            tessera_mbarrier_init(&tessera_free[stage], THREADS / CONSUMERS / 32);  // the warps of the group that used it
{%- else if cluster_blocks.is_some() %}
            tessera_mbarrier_init(&tessera_free[stage], THREADS / 32 * CLUSTER_BLOCKS);  // every block's compute warps
{%- else %}
            tessera_mbarrier_init(&tessera_free[stage], THREADS / 32);
{%- endif %}
        }
{%- if !tile_copies.is_empty() %}
{%- if tma %}
        tessera_mbarrier_init(&tessera_tile_full, 1);
{%- else %}
        tessera_mbarrier_init(&tessera_tile_full, PRODUCERS);
{%- endif %}
        tessera_mbarrier_init(&tessera_tile_free, THREADS / 32);
{%- endif %}
{%- if dynamic %}
        for (int slot = 0; slot < 2; ++slot) {
            tessera_mbarrier_init(&tessera_tile_slot_full[slot], 1);
            tessera_mbarrier_init(&tessera_tile_slot_free[slot], {{ slot_readers }});
        }
{%- endif %}
{%- if consumers > 1 %}
        for (int group = 0; group < CONSUMERS; ++group) {
            tessera_mbarrier_init(&tessera_turn[group], THREADS / CONSUMERS / 32);
        }
{%- endif %}
        tessera_mbarrier_init_fence();
    }
{%- if cluster_blocks.is_some() %}
    // every block's mbarriers are ready before any block multicasts into it or arrives on them
    tessera_cluster_sync();
{%- else %}
    __syncthreads();
{%- endif %}
    if (tid >= THREADS) {
{%- if hands_registers %}
        // the producers need few registers: {{ producer_registers }} each leaves {{ compute_registers }} to every compute thread
        tessera_registers_down<{{ producer_registers }}>();
{%- endif %}
{%- if tma %}
{%- if hands_registers %}
        // one thread issues every copy; the rest of the warpgroup was only here to give registers back
{%- else %}
        // one thread issues every copy; one warp of producers keeps its registers (setmaxnreg moves
        // whole warpgroups'), so every thread of the block was compiled for an even share of them
{%- endif %}
        if (tid != THREADS) return;
{%- for map in tensor_maps %}
        tessera_tma_prefetch(&{{ map }});
{%- endfor %}
{%- endif %}
        int filled = 0;  // k-tiles this block's producers have issued: stage filled % STAGES
{%- if !tile_copies.is_empty() %}
        int tiles_done = 0;  // tiles whose own copies this block's producers have issued
{%- endif %}
{%- if dynamic %}
        int next_tile = blockIdx.x;  // the tile the next turn takes
        for (int turn = 0;; ++turn) {
{%- if tma %}
{{ tile_give|indent(12, true) }}
            const int tile = taken;
            if (tile >= tiles) break;
{%- else %}
            // one producer takes the tiles; every producer reads them from the slot
            if (tid == THREADS) {
{{ tile_give|indent(16, true) }}
            }
{{ tile_take|indent(12, true) }}
{%- endif %}
{%- else %}
        for (int {{ turn }} = {{ first_tile }}; {{ turn }} < tiles; {{ turn }} += {{ tile_step }}) {
{%- endif %}
{%- for (var, value) in bindings %}
            const int {{ var }} = {{ value }};
{%- endfor %}
{%- if !tile_copies.is_empty() %}
            // the tile's own buffers, once the compute threads are done with the previous tile's
            // (this tile's stages wait behind them)
            if (tiles_done > 0) {
                tessera_mbarrier_wait(&tessera_tile_free, (tiles_done - 1) & 1);
            }
{%- if tma %}
            tessera_mbarrier_expect_bytes(&tessera_tile_full, {{ tile_bytes }});
{%- for block in tile_copies %}
{{ block }}
{%- endfor %}
{%- else %}
            for (int tid = threadIdx.x - THREADS; tid < THREADS; tid += PRODUCERS) {
{%- for block in tile_copies %}
{{ block }}
{%- endfor %}
            }
            tessera_async_arrive_on(&tessera_tile_full);
{%- endif %}
            ++tiles_done;
{%- endif %}
            const int {{ var }}_tiles = {{ count }};
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
{%- if cluster_blocks.is_some() %}
        // the other blocks' compute warps arrive on this block's mbarriers: it may not exit
        // before the last of them has freed each stage
        for (int fill = max(filled - STAGES, 0); fill < filled; ++fill) {
            tessera_mbarrier_wait(&tessera_free[fill % STAGES], (fill / STAGES) & 1);
        }
{%- endif %}
        return;
    }
{%- if hands_registers %}
    tessera_registers_up<{{ compute_registers }}>();
{%- endif %}
{%- if consumers > 1 %}
    // `consumers = {{ consumers }}`: the compute threads are {{ consumers }} groups of THREADS / CONSUMERS, group g taking the
    // block's tiles g, g + {{ consumers }}, ... They multiply in turn (each waits on its turn mbarrier until the
    // group before it has issued a tile's multiplications), so one group's epilogue runs while the next
    // group's tile is multiplied.
    const int consumer = tid / (THREADS / CONSUMERS);
    {
        // each group's threads hold their own tile's fragment: tid counts within the group
        const int tid = threadIdx.x % (THREADS / CONSUMERS);
{{ consumer_loop }}
    }
{%- else %}
{{ consumer_loop }}
{%- endif %}
}