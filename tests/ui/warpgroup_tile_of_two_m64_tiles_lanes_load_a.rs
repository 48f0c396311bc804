// A TF32 A stored MN-major is loaded by the lanes into registers, one m64 tile's worth; a
// warpgroup of two m64 tiles reads each tile's A through a descriptor of its own.
use tessera::prelude::*;

#[tile_kernel(threads = 128, vector = 4, target = sm_90a, precision = tf32, consts(BM = 128, BN = 128, BK = 32))]
pub fn two_tiles_lanes_load_a(a: Global<f32, (M, K)>, b: Global<f32, (K, N)>, c: GlobalMut<f32, (M, N)>) {
    let (bx, by) = grid(cdiv(N, BN), cdiv(M, BM));
    let a_s = shared::<f32>([BM, BK]).swizzle_bytes(128).panels();
    let b_s = shared::<f32>([BK, BN]).swizzle_bytes(128).panels();
    let mut acc_t = fragment::<f32>([BN, BM]).warpgroup_tile([128, 128]);
    for k in pipeline(0..cdiv(K, BK), stages = 4, producers = 128, copies = tma) {
        copy(a.tile([by, k], [BM, BK]), &a_s);
        copy(b.tile([k, bx], [BK, BN]), &b_s);
        mma(&b_s.t(), &a_s.t(), &mut acc_t);
    }
    copy(&acc_t.t(), c.tile([by, bx], [BM, BN]));
}

fn main() {}
