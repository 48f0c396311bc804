use tessera::prelude::*;

/// y[row] = the sum of row `row` of x
#[tile_kernel(threads = 256, vector = 1)]
pub fn row_sums(x: Global<f32, (R, C)>, y: GlobalMut<f32, (R,)>) {
    let (row,) = grid(R);
    let mut s = 0.0f32;
    for c in (thread_index()..C).step_by(THREADS) {
        s += x[[row, c]];
    }
    let total = block_sum(s);
    if thread_index() == 0 {
        y[row] = total;
    }
}

// The README's thread-code example: rows of 1000 integers (exact in f32), summed on the GPU if
// there is one, else on the CPU simulation, against the host.
fn main() -> Result<(), Error> {
    let (rows, cols) = (3, 1000);
    let host: Vec<f32> = (0..rows * cols).map(|i| (i % 7) as f32 - 3.0).collect();
    let backend = Backend::detect()?;
    let x = backend.upload(&host, [rows, cols])?;
    let mut y = backend.zeros::<f32>([rows])?;
    row_sums::launch(&backend, &x, &mut y)?;
    let sums: Vec<f32> = backend.download(&y)?;
    let want: Vec<f32> = host.chunks(cols).map(|row| row.iter().sum()).collect();
    assert_eq!(sums, want);
    println!("{}", row_sums::REPORT);
    // what NVRTC's ptxas makes of it (registers, spills) and the occupancy from them
    let options = tessera::check::CheckOptions::new(tessera::dsl::Target::SM_90);
    match tessera::check::check(&row_sums::KERNEL, &options) {
        Ok(report) => println!("{report}"),
        Err(error) => println!("not checked: {error}"),
    }
    Ok(())
}
