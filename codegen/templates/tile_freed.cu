
    // this warp reads the tile's own buffers no more: the producers may refill them with the
    // next tile's
    __syncwarp();
    if (tid % 32 == 0) {
        tessera_mbarrier_arrive(&tessera_tile_free);
    }