use tessera::prelude::*;

// P·V with V in f32: the register operand is rounded to B's 16-bit type for m16n8k16, and
// TF32's m16n8k8 takes A in a lane layout the accumulators do not have.
#[tile_kernel(threads = 128, vector = 4, precision = tf32, consts(BM = 64, BN = 64, BD = 64))]
pub fn p_times_f32(v: Global<f32, (N, D)>, o: GlobalMut<f32, (M, D)>) {
    let (bx, by) = grid(cdiv(D, BD), cdiv(M, BM));
    let v_s = shared::<f32>([BN, BD]);
    let mut p = fragment::<f32>([BM, BN]).warp_tile([16, BN]);
    let mut acc = fragment::<f32>([BM, BD]).warp_tile([16, BD]);
    copy(v.tile([0, bx], [BN, BD]), &v_s);
    mma(&p, &v_s, &mut acc);
    copy(&acc, o.tile([by, bx], [BM, BD]));
}

fn main() {}
