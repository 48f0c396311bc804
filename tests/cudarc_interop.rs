//! tessera kernels on memory and streams a program already holds through cudarc (as candle
//! or burn hand them out): one context shared by the program's cudarc code and tessera,
//! no copies, no hidden synchronisation. All of it needs a GPU.

mod common;

use common::{gemm_reference, random_floats, relative_error};
use tessera::catalog::map::saxpy;
use tessera::catalog::sgemm::sgemm_v12;
use tessera::cudarc::driver::CudaContext;
use tessera::runtime::{TensorView, TensorViewMut};
use tessera::{DeviceTensor, Error, Gpu};

fn context() -> std::sync::Arc<CudaContext> {
    CudaContext::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_runs_on_the_programs_stream_over_its_own_slices_without_copies() {
    let stream = context().new_stream().unwrap();
    let n = 1 << 20;
    let (host_x, host_y) = (random_floats(n, 1), random_floats(n, 2));
    let x = stream.clone_htod(&host_x).unwrap();
    let y = stream.clone_htod(&host_y).unwrap();
    let (x_address, y_address) = (address_of(&x), address_of(&y));

    let gpu = Gpu::on_stream(stream.clone()).unwrap();
    let x = DeviceTensor::from_cuda_slice(x, [n]).unwrap();
    let mut y = DeviceTensor::from_cuda_slice(y, [n]).unwrap();
    saxpy::launch(&gpu, 3.0, &x, &mut y).unwrap();

    // the very same allocations come back, and the program's stream orders the result
    let (x, y) = (x.into_cuda_slice(), y.into_cuda_slice());
    assert_eq!((address_of(&x), address_of(&y)), (x_address, y_address), "no copy either way");
    let got = stream.clone_dtoh(&y).unwrap();
    for (i, ((g, xi), yi)) in got.iter().zip(&host_x).zip(&host_y).enumerate() {
        let want = 3.0 * xi + yi;
        assert!((g - want).abs() <= f32::EPSILON * (3.0 * xi.abs() + yi.abs()), "y[{i}] = {g}, want {want}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_launch_on_another_stream_waits_for_the_memorys_stream_and_that_stream_waits_for_it() {
    let context = context();
    let program_stream = context.new_stream().unwrap();
    let gpu = Gpu::from_context(context.clone()).unwrap();
    assert_ne!(gpu.cuda_stream().cu_stream(), program_stream.cu_stream());

    // big enough that an unordered copy-back would overtake the kernel
    let n = 1 << 26;
    let host_x = vec![1.0f32; n];
    let x = program_stream.clone_htod(&host_x).unwrap();
    let mut y = program_stream.alloc_zeros::<f32>(n).unwrap();
    for round in 1..=3 {
        // the program writes y on its own stream, immediately before the launch reads it
        program_stream.memset_zeros(&mut y).unwrap();
        let x_view = TensorView::of_cuda(x.slice(..), [n]).unwrap();
        let mut y_view = TensorViewMut::of_cuda(y.slice_mut(..), [n]).unwrap();
        saxpy::launch(&gpu, round as f32, &x_view, &mut y_view).unwrap();
        drop((x_view, y_view));
        // ... and reads it back on its own stream, with no synchronisation in between
        let got = program_stream.clone_dtoh(&y).unwrap();
        let wrong = got.iter().position(|&v| v != round as f32);
        assert_eq!(wrong, None, "round {round}: y[{:?}] was not ordered after the launch", wrong);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shaped_views_over_parts_of_cudarc_buffers_are_gemm_operands() {
    let stream = context().default_stream();
    let gpu = Gpu::on_stream(stream.clone()).unwrap();
    let (m, n, k) = (300, 257, 129);
    let (host_a, host_b) = (random_floats(m * k, 3), random_floats(k * n, 4));
    // A sits after 17 other elements of its buffer; C is the first m·n of a longer one
    let mut packed_a = vec![0.0f32; 17];
    packed_a.extend_from_slice(&host_a);
    let a = stream.clone_htod(&packed_a).unwrap();
    let b = stream.clone_htod(&host_b).unwrap();
    let mut c = stream.alloc_zeros::<f32>(m * n + 100).unwrap();
    let a_view = TensorView::of_cuda(a.slice(17..), [m, k]).unwrap();
    let b_view = TensorView::of_cuda(b.slice(..), [k, n]).unwrap();
    let mut c_view = TensorViewMut::of_cuda(c.slice_mut(..), [m, n]).unwrap();
    sgemm_v12::launch(&gpu, &a_view, &b_view, &mut c_view, 1.0, 0.0).unwrap();
    let got = gpu.download(&c_view).unwrap();
    assert_eq!(got.len(), m * n);
    let want = gemm_reference(&host_a, &host_b, &vec![0.0; m * n], (m, n, k), 1.0, 0.0);
    let error = relative_error(&got, &want);
    assert!(error < 1e-5, "relative error {error}");
    drop(c_view);
    let tail = stream.clone_dtoh(&c.slice(m * n..)).unwrap();
    assert!(tail.iter().all(|&v| v == 0.0), "the kernel wrote past the view");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tessera_tensors_hand_their_memory_to_cudarc_and_short_buffers_are_typed_errors() {
    let gpu = Gpu::new(0).unwrap();
    let x = gpu.upload(&[1.0f32, 2.0, 3.0], [3]).unwrap();
    let slice = x.into_cuda_slice();
    assert_eq!(gpu.cuda_stream().clone_dtoh(&slice).unwrap(), vec![1.0, 2.0, 3.0]);
    match DeviceTensor::from_cuda_slice(slice, [2, 2]) {
        Err(Error::CudaBufferTooShort { len: 3, shape, needed: 4 }) => assert_eq!(shape, vec![2, 2]),
        other => panic!("expected CudaBufferTooShort, got {other:?}"),
    }
}

fn address_of(slice: &tessera::cudarc::driver::CudaSlice<f32>) -> u64 {
    use tessera::cudarc::driver::DevicePtr;
    let stream = slice.stream().clone();
    let address = slice.device_ptr(&stream).0;
    address
}
