//! Rows of 2-D tensors moved VECTOR elements at a time in thread code: `x.vector([r, i])`
//! loads, `y.vector([r, i]) = w` stores, `vector(v)` and lanes `w[k]` — with the row tails
//! element by element, at widths the launch narrows where a leading dimension is not a
//! multiple of VECTOR; `x.vector_from(..)` from every element of a row; on the simulation and,
//! ignored without one, on a GPU.

mod common;

use common::{random_floats, POISON};
use tessera::prelude::*;
use tessera::Backend;

/// y = 2·x + r (r the row index), each row in vectors of 4 where whole, the tail one by one.
#[tile_kernel(threads = 64, vector = 4)]
fn scale_rows(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R, C)>) {
    let (row,) = grid(R);
    for i in (thread_index()..(C + VECTOR - 1) / VECTOR).step_by(THREADS) {
        if (i + 1) * VECTOR <= C {
            let w = x.vector([row, i]);
            let mut out = vector(0.0f32);
            for k in 0..VECTOR {
                out[k] = 2.0 * w[k] + row as f32;
            }
            y.vector([row, i]) = out;
        } else {
            for k in 0..VECTOR {
                let c = i * VECTOR + k;
                if c < C {
                    y[[row, c]] = 2.0 * x[[row, c]] + row as f32;
                }
            }
        }
    }
}

/// y[[r, c·VECTOR + k]] = x[[r, c + k]]: the bf16 vector (8 elements, 16 bytes) from every
/// column c of row r that has a whole vector after it.
#[tile_kernel(threads = 64, vector = 8)]
fn vectors_from_every_column(x: Global<bf16, (R, C)>, y: GlobalMut<bf16, (R, W)>) {
    let (row,) = grid(R);
    for c in (thread_index()..C).step_by(THREADS) {
        if c + VECTOR <= C {
            let w = x.vector_from([row, c]);
            for k in 0..VECTOR {
                y[[row, c * VECTOR + k]] = w[k];
            }
        }
    }
}

/// The same on a 1-D f32 tensor (4 elements a vector).
#[tile_kernel(threads = 64, vector = 4)]
fn vectors_from_every_element(x: Global<f32, (N,)>, y: GlobalMut<f32, (M,)>) {
    let (_b,) = grid(1);
    for c in (thread_index()..N).step_by(THREADS) {
        if c + VECTOR <= N {
            let w = x.vector_from(c);
            for k in 0..VECTOR {
                y[c * VECTOR + k] = w[k];
            }
        }
    }
}

/// The same with vectors of 2 floats (8 bytes): `vector_from` reads them element by element.
#[tile_kernel(threads = 64, vector = 2)]
fn pairs_from_every_element(x: Global<f32, (N,)>, y: GlobalMut<f32, (M,)>) {
    let (_b,) = grid(1);
    for c in (thread_index()..N).step_by(THREADS) {
        if c + VECTOR <= N {
            let w = x.vector_from(c);
            for k in 0..VECTOR {
                y[c * VECTOR + k] = w[k];
            }
        }
    }
}

on_both_backends!(rows_move_in_vectors_with_element_tails, vector_from_reads_the_vector_at_every_element);

fn rows_move_in_vectors_with_element_tails(backend: &Backend) {
    // (rows, columns, leading dimension): whole vectors, a tail, an unaligned leading dimension
    for (rows, cols, ld, width) in [(3, 64, 64, 4), (5, 67, 68, 4), (4, 67, 67, 1), (2, 1, 1, 1), (3, 6, 10, 2)] {
        let host = random_floats(rows * ld, (cols * 7) as u64);
        let x = backend.upload(&host, [rows, ld]).unwrap();
        let mut y = backend.filled([rows, ld], f32::from_bits(POISON)).unwrap();
        let launched = scale_rows::launch(
            backend,
            &x.submatrix(0..rows, 0..cols).unwrap(),
            &mut y.submatrix_mut(0..rows, 0..cols).unwrap(),
        )
        .unwrap();
        assert_eq!(launched.vector.get(), width, "{rows}×{cols} (ld {ld})");
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            for c in 0..ld {
                let g = got[r * ld + c];
                if c < cols {
                    assert_eq!(g, 2.0 * host[r * ld + c] + r as f32, "{rows}×{cols} (ld {ld}): y[{r}][{c}]");
                } else {
                    assert_eq!(g.to_bits(), POISON, "{rows}×{cols} (ld {ld}): y[{r}][{c}] past the row was written");
                }
            }
        }
    }
}

/// Rows of 37 and 41 columns (each row starting on another 2-byte boundary), and views whose
/// rows start 1 or 3 columns into their parent (the first chunk before the row: read element by
/// element), every column of every row; 1-D f32 at lengths 4 to 70 and 1 element in, in vectors
/// of 4 and of 2 (8 bytes: read element by element).
fn vector_from_reads_the_vector_at_every_element(backend: &Backend) {
    use tessera::half::bf16;
    for (rows, cols, ld, from) in [(3, 37, 37, 0), (4, 41, 41, 0), (3, 30, 37, 1), (2, 33, 40, 3), (2, 8, 9, 1)] {
        let host: Vec<bf16> = random_floats(rows * ld, (cols + ld) as u64).iter().map(|&v| bf16::from_f32(v)).collect();
        let parent = backend.upload(&host, [rows, ld]).unwrap();
        let x = parent.submatrix(0..rows, from..from + cols).unwrap();
        let mut y = backend.filled([rows, cols * 8], bf16::from_bits(0x7fc1)).unwrap();
        vectors_from_every_column::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for r in 0..rows {
            for c in 0..cols {
                for k in 0..8 {
                    let g = got[r * cols * 8 + c * 8 + k];
                    if c + 8 <= cols {
                        let want = host[r * ld + from + c + k];
                        assert_eq!(
                            g.to_bits(),
                            want.to_bits(),
                            "{rows}×{cols} (ld {ld}, from {from}): row {r}, vector from {c}, element {k}"
                        );
                    } else {
                        assert_eq!(
                            g.to_bits(),
                            0x7fc1,
                            "{rows}×{cols}: row {r}, column {c} has no whole vector but was written"
                        );
                    }
                }
            }
        }
    }
    for (len, from) in [(4, 0), (7, 0), (70, 0), (33, 1)] {
        let host = random_floats(len + from, len as u64);
        let parent = backend.upload(&host, [len + from]).unwrap();
        let x = parent.slice(from..from + len).unwrap();
        let mut y = backend.filled([len * 4], f32::from_bits(POISON)).unwrap();
        vectors_from_every_element::launch(backend, &x, &mut y).unwrap();
        let got = backend.download(&y).unwrap();
        for c in 0..=len - 4 {
            for k in 0..4 {
                assert_eq!(got[c * 4 + k], host[from + c + k], "{len} from {from}: vector from {c}, element {k}");
            }
        }
        let mut pairs = backend.filled([len * 2], f32::from_bits(POISON)).unwrap();
        pairs_from_every_element::launch(backend, &x, &mut pairs).unwrap();
        let got = backend.download(&pairs).unwrap();
        for c in 0..=len - 2 {
            for k in 0..2 {
                assert_eq!(got[c * 2 + k], host[from + c + k], "{len} from {from}: pair from {c}, element {k}");
            }
        }
    }
}

#[test]
fn vector_from_renders_the_chunk_helper_with_the_rows_bounds() {
    let source = vectors_from_every_column::KERNEL.cuda_source();
    assert!(
        source.contains("__device__ __forceinline__ V tessera_vector_from(const T* p, const T* first, const T* end)"),
        "{source}"
    );
    assert!(
        source.contains("tessera_vector_from<tessera_bf16x8>(x + row * x_ld + c, x + row * x_ld, x + row * x_ld + C)"),
        "{source}"
    );
    let one_d = vectors_from_every_element::KERNEL.cuda_source();
    assert!(one_d.contains("tessera_vector_from<float4>(x + c, x, x + N)"), "{one_d}");
}

#[test]
fn vector_rows_render_as_one_access_from_the_row_start() {
    let source = scale_rows::KERNEL.cuda_source();
    assert!(source.contains("const float4 w = reinterpret_cast<const float4*>(x + row * x_ld)[i];"), "{source}");
    assert!(source.contains("float4 out = make_float4(0.0f, 0.0f, 0.0f, 0.0f);"), "{source}");
    assert!(
        source.contains("reinterpret_cast<float*>(&out)[k] = 2.0f * reinterpret_cast<const float*>(&w)[k]"),
        "{source}"
    );
    assert!(source.contains("reinterpret_cast<float4*>(y + row * y_ld)[i] = out;"), "{source}");
    assert!(scale_rows::REPORT.contains("128-bit"), "{}", scale_rows::REPORT);
}

/// y[i] = x[i + SHIFT] in vectors read from element SHIFT + 4·t: aligned only when x's
/// address plus SHIFT floats is.
#[tile_kernel(threads = 32, vector = 4)]
fn shifted_vectors(x: Global<f32, (N,)>, y: GlobalMut<f32, (M,)>, shift: i32) {
    let (_b,) = grid(1);
    let i = thread_index() * VECTOR;
    if i + VECTOR <= M {
        y.vector_at(i) = x.vector_at(shift + i);
    }
}

#[test]
fn a_vector_at_a_misaligned_element_stops_the_simulation_with_the_address() {
    let sim = common::simulator();
    let host = random_floats(64 + 8, 5);
    let x = sim.upload(&host, [64 + 8]).unwrap();
    let mut y = sim.zeros::<f32>([64]).unwrap();
    shifted_vectors::launch(&sim, &x, &mut y, 4).unwrap();
    assert_eq!(sim.download(&y).unwrap(), host[4..68].to_vec());
    match shifted_vectors::launch(&sim, &x, &mut y, 1) {
        Err(tessera::Error::SimTrap { message, .. }) => {
            assert!(
                message.contains("16-byte vector access (`vector_at`)") && message.contains("not 16-byte aligned"),
                "{message}"
            )
        }
        other => panic!("expected a trap for the misaligned vector_at, got {other:?}"),
    }
}
