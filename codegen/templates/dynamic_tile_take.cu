// the tile taken for this turn, from its slot (one past the last: none is left); the warp has
// read it once all its lanes have
tessera_mbarrier_wait(&tessera_tile_slot_full[turn % 2], (turn / 2) & 1);
const int tile = tessera_tile_slot[turn % 2];
__syncwarp();
if (tid % 32 == 0) {
    tessera_mbarrier_arrive(&tessera_tile_slot_free[turn % 2]);
}
if (tile >= tiles) break;
