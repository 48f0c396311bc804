// The epilogue lab's erf of its own (see variants.py): the scheme CUDA's erff uses, coefficients
// fitted here (max 1.6 ulp against erf in double), and the same for four values in step.
#pragma once
// lab: erf(x) = x + x·q(x²) for |x| < 1, else ±(1 − 2^−(t + t·q(t))), t = |x| — one Horner chain
// whose coefficients a select picks (fitted here: max 1.6 ulp against erf in double)
__device__ __forceinline__ float lab_ex2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ float lab_erf(float x) {
    const float t = fabsf(x);
    const bool big = t >= 1.0f;
    const float u = big ? t : x * x;
    float p = big ? 2.3174692614702508e-05f : 7.889122207416221e-05f;
    p = fmaf(p, u, big ? -0.0005271384143270552f : -0.0008020842215046287f);
    p = fmaf(p, u, big ? 0.005455958656966686f : 0.005189535208046436f);
    p = fmaf(p, u, big ? -0.034564726054668427f : -0.026854444295167923f);
    p = fmaf(p, u, big ? 0.1533793956041336f : 0.11283600330352783f);
    p = fmaf(p, u, big ? 0.9164277911186218f : -0.3761262595653534f);
    p = fmaf(p, u, big ? 0.6282218098640442f : 0.12837916612625122f);
    const float r = fmaf(big ? t : x, p, big ? t : x);
    return big ? copysignf(1.0f - lab_ex2(-r), x) : r;
}
__device__ __forceinline__ float lab_gelu(float x) { return 0.5f * x * (1.0f + lab_erf(x * 0.70710678118654752f)); }
// the same for four values, step by step across them, so that their chains interleave
__device__ __forceinline__ float4 lab_gelu4(float4 v) {
    float x[4] = {v.x, v.y, v.z, v.w}, s[4], t[4], u[4], p[4];
    bool big[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) { s[k] = x[k] * 0.70710678118654752f; t[k] = fabsf(s[k]); big[k] = t[k] >= 1.0f; u[k] = big[k] ? t[k] : s[k] * s[k]; }
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(big[k] ? 2.3174692614702508e-05f : 7.889122207416221e-05f, u[k], big[k] ? -0.0005271384143270552f : -0.0008020842215046287f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(p[k], u[k], big[k] ? 0.005455958656966686f : 0.005189535208046436f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(p[k], u[k], big[k] ? -0.034564726054668427f : -0.026854444295167923f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(p[k], u[k], big[k] ? 0.1533793956041336f : 0.11283600330352783f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(p[k], u[k], big[k] ? 0.9164277911186218f : -0.3761262595653534f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = fmaf(p[k], u[k], big[k] ? 0.6282218098640442f : 0.12837916612625122f);
    #pragma unroll
    for (int k = 0; k < 4; ++k) { const float r = fmaf(big[k] ? t[k] : s[k], p[k], big[k] ? t[k] : s[k]); p[k] = big[k] ? copysignf(1.0f - lab_ex2(-r), s[k]) : r; }
    #pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = 0.5f * x[k] * (1.0f + p[k]);
    return make_float4(x[0], x[1], x[2], x[3]);
}
