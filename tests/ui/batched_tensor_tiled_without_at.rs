use tessera::prelude::*;

// a rank-4 tensor is a batch of matrices: a tile first selects one with `.at([b, h])`
#[tile_kernel(threads = 256, vector = 4, consts(BQ = 64, D = 64))]
pub fn load_q(q: Global<f32, (B, H, SQ, HD)>, o: GlobalMut<f32, (B, H, SQ, HD)>) {
    let (qt, h, b) = grid(cdiv(SQ, BQ), H, B);
    let q_s = shared::<f32>([BQ, D]);
    copy(q.tile([qt, 0], [BQ, D]), &q_s);
    copy(&q_s, o.at([b, h]).tile([qt, 0], [BQ, D]));
}

fn main() {}
