// A register fragment is multiplied as its lanes hold it: `p.t()` would move every value to
// another lane, so it is refused (transpose the other operand instead).
use tessera::prelude::*;

#[tile_kernel(threads = 128, vector = 8, target = sm_90a, consts(BQ = 64, BKV = 64, HD = 64))]
pub fn transposed_scores(q: Global<bf16, (S, E)>, k: Global<bf16, (S, E)>, v: Global<bf16, (S, E)>, o: GlobalMut<f32, (S, E)>) {
    let (bq,) = grid(cdiv(S, BQ));
    let q_s = shared::<bf16>([BQ, HD]).swizzle_bytes(128).panels();
    let k_s = shared::<bf16>([BKV, HD]).swizzle_bytes(128).panels();
    let v_s = shared::<bf16>([BKV, HD]).swizzle_bytes(128).panels();
    let mut s = fragment::<f32>([BQ, BKV]).warpgroup_tile([64, BKV]);
    let mut o_acc = fragment::<f32>([BQ, HD]).warpgroup_tile([64, HD]);
    for j in pipeline(0..cdiv(S, BKV), stages = 3) {
        copy(q.tile([bq, 0], [BQ, HD]), &q_s);
        copy(k.tile([j, 0], [BKV, HD]), &k_s);
        copy(v.tile([j, 0], [BKV, HD]), &v_s);
        mma(&q_s, &k_s.t(), &mut s);
        mma(&s.t(), &v_s, &mut o_acc);
    }
    copy(&o_acc, o.tile([bq, 0], [BQ, HD]));
}

fn main() {}
