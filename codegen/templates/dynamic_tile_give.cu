// `.dynamic()`: this turn's tile, and the next turn's asked for now (the atomic's round trip
// passes while this tile's copies are issued); handed over in slot turn % 2 once every warp
// has read what it held two turns ago
const int taken = next_tile;
if (taken < tiles) {
    next_tile = gridDim.x + atomicAdd(tessera_tile_counters, 1);
}
if (turn >= 2) {
    tessera_mbarrier_wait(&tessera_tile_slot_free[turn % 2], (turn / 2 - 1) & 1);
}
tessera_tile_slot[turn % 2] = taken;
tessera_mbarrier_arrive(&tessera_tile_slot_full[turn % 2]);  // releases the slot's value to the waiters
