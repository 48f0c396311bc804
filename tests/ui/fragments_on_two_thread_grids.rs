use tessera::prelude::*;

#[tile_kernel(threads = 64, vector = 4, consts(BM = 32, BN = 32, TM = 4, TN = 4))]
fn two_grids(c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let mut acc = fragment::<f32>([BM, BN]).thread_tile([TM, TN]);
    let mut wide = fragment::<f32>([BM, BN]).thread_tile([2, 8]);
    copy(&acc, c.tile([by, bx], [BM, BN]));
    copy(&wide, c.tile([by, bx], [BM, BN]));
}

fn main() {}
