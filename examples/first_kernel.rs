use tessera::prelude::*;

/// float4 copy: one 128-bit access per thread, one tile per block.
#[tile_kernel(threads = 256, vector = 4, consts(TILE = 1024))]
pub fn copy_f32x4(x: Global<f32, (N,)>, y: GlobalMut<f32, (N,)>) {
    let (bx,) = grid(cdiv(N, TILE));
    copy(x.tile([bx], [TILE]), y.tile([bx], [TILE]));
}

fn main() -> Result<(), Error> {
    let n = 10_003;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();

    let backend = Backend::detect()?; // the GPU if there is one, else the CPU simulation
    println!("{backend}"); // says which, and why
    let x = backend.upload(&host, [n])?;
    let mut y = backend.zeros::<f32>([n])?;
    copy_f32x4::launch(&backend, &x, &mut y)?; // N bound from the shapes, grid = cdiv(N, TILE)
    let result: Vec<f32> = backend.download(&y)?; // the result back on the host
    assert_eq!(result, host);

    println!("{}", copy_f32x4::CUDA_SOURCE); // the CUDA C tessera emitted
    Ok(())
}
