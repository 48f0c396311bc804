use tessera::prelude::*;

// P·V with P's 64 columns split between two warps: no warp holds a whole row of P, the k
// extent of its mma, in its registers.
#[tile_kernel(threads = 128, vector = 8, consts(BM = 32, BN = 64, BD = 64))]
pub fn p_split_across_warps(v: Global<bf16, (N, D)>, o: GlobalMut<f32, (M, D)>) {
    let (bx, by) = grid(cdiv(D, BD), cdiv(M, BM));
    let v_s = shared::<bf16>([BN, BD]).swizzle_bytes(128);
    let mut p = fragment::<f32>([BM, BN]).warp_tile([16, 32]);
    let mut acc = fragment::<f32>([BM, BD]).warp_tile([16, 32]);
    copy(v.tile([0, bx], [BN, BD]), &v_s);
    mma(&p, &v_s, &mut acc);
    copy(&acc, o.tile([by, bx], [BM, BD]));
}

fn main() {}
