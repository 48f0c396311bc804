use tessera::prelude::*;

// `q` has two batch dimensions (B, H): `.at([..])` takes two indices
#[tile_kernel(threads = 256, vector = 4, consts(BQ = 64, D = 64))]
pub fn load_q(q: Global<f32, (B, H, SQ, HD)>, o: GlobalMut<f32, (B, H, SQ, HD)>) {
    let (qt, h, b) = grid(cdiv(SQ, BQ), H, B);
    let q_s = shared::<f32>([BQ, D]);
    copy(q.at([b * H + h]).tile([qt, 0], [BQ, D]), &q_s);
    copy(&q_s, o.at([b, h]).tile([qt, 0], [BQ, D]));
}

fn main() {}
