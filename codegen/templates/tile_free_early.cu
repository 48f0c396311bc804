
    // nothing after the k loop reads the tile's own buffers: the producers may refill them
    // with the next tile's while this one's epilogue runs
    __syncwarp();
    if (tid % 32 == 0) {
        tessera_mbarrier_arrive(&tessera_tile_free);
    }