// tessera_sim.h: the CUDA built-ins that tessera's emitted C uses, for running that exact
// source on the CPU (tessera-runtime's `Simulator`).
//
// The simulator compiles a kernel's CUDA source with the host C++ compiler after this header
// and appends an entry point (`TESSERA_SIM_ENTRY`). Execution is deterministic: the blocks of
// a grid run one after another, and the threads of a block run as fibers on one OS thread,
// each until its next barrier (`__syncthreads`), warp-synchronous operation (shuffles, votes,
// `__syncwarp`) or its end, in an order the caller chooses. Output that depends on that order
// is a race; a barrier some threads never reach is reported, not waited on forever.
//
// `__shared__` variables are `static`, so every thread of a block sees the same storage; they
// live in one section that is poisoned (every byte 0xFF) before each block, so a read of
// shared memory that this block never wrote shows up as NaN / -1.
//
// Dynamic shared memory: the runtime rewrites each `extern __shared__ T name[];` (one per
// line) into a `__shared__ T name[TESSERA_SIM_DYNAMIC_SHARED_BYTES];`, as large as any GPU's
// opt-in maximum, poisoned with the rest.
//
// Not simulated (the runtime refuses the kernel before compiling it): inline PTX (`asm`),
// other forms of `extern __shared__`, CUDA headers (the `<cuda_pipeline.h>` cp.async API,
// `wmma`). tessera's own helpers, whose GPU versions are inline PTX in `#ifndef TESSERA_SIM_H`
// blocks, are defined here instead: cp.async (`tessera_async_copy/commit/wait`), mbarriers,
// ldmatrix and mma.sync (`tessera_ldmatrix_x{1,2,4}`, `tessera_mma_*`); so are `__half` and
// `__nv_bfloat16` with the functions of <cuda_fp16.h> and <cuda_bf16.h> that kernels use.
#ifndef TESSERA_SIM_H
#define TESSERA_SIM_H

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) && !defined(TESSERA_SIM_UCONTEXT)
#define TESSERA_SIM_ASM_SWITCH 1
#else
#define TESSERA_SIM_ASM_SWITCH 0
#include <ucontext.h>
#endif

// ── Qualifiers ───────────────────────────────────────────────────────────────────────────
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
// Clusters come from the launch (the runtime passes the kernel's `cluster = ..`).
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
// One static object per declaration: shared by all threads of the block (blocks run one after
// another; a cluster's blocks take turns, each with its own copy of the section). The section
// lets the scheduler poison all of them before each block.
#define __shared__ static __attribute__((section("tessera_shared"), aligned(16)))
// Elements of each simulated dynamic shared array: sm_90's 227 KiB opt-in maximum.
#define TESSERA_SIM_DYNAMIC_SHARED_BYTES (227 * 1024)

#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 800
#define TESSERA_SIM 1

// ── Vector types, with CUDA's sizes and alignments ───────────────────────────────────────
#define TESSERA_VEC1(name, T, align)                                                         \
    struct __attribute__((aligned(align))) name { T x; };                                    \
    static inline name make_##name(T x) { return name{x}; }
#define TESSERA_VEC2(name, T, align)                                                         \
    struct __attribute__((aligned(align))) name { T x, y; };                                 \
    static inline name make_##name(T x, T y) { return name{x, y}; }
#define TESSERA_VEC3(name, T)                                                                \
    struct name { T x, y, z; };                                                              \
    static inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define TESSERA_VEC4(name, T, align)                                                         \
    struct __attribute__((aligned(align))) name { T x, y, z, w; };                           \
    static inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

TESSERA_VEC1(char1, signed char, 1)
TESSERA_VEC2(char2, signed char, 2)
TESSERA_VEC3(char3, signed char)
TESSERA_VEC4(char4, signed char, 4)
TESSERA_VEC1(uchar1, unsigned char, 1)
TESSERA_VEC2(uchar2, unsigned char, 2)
TESSERA_VEC3(uchar3, unsigned char)
TESSERA_VEC4(uchar4, unsigned char, 4)
TESSERA_VEC1(short1, short, 2)
TESSERA_VEC2(short2, short, 4)
TESSERA_VEC3(short3, short)
TESSERA_VEC4(short4, short, 8)
TESSERA_VEC1(ushort1, unsigned short, 2)
TESSERA_VEC2(ushort2, unsigned short, 4)
TESSERA_VEC3(ushort3, unsigned short)
TESSERA_VEC4(ushort4, unsigned short, 8)
TESSERA_VEC1(int1, int, 4)
TESSERA_VEC2(int2, int, 8)
TESSERA_VEC3(int3, int)
TESSERA_VEC4(int4, int, 16)
TESSERA_VEC1(uint1, unsigned int, 4)
TESSERA_VEC2(uint2, unsigned int, 8)
TESSERA_VEC3(uint3, unsigned int)
TESSERA_VEC4(uint4, unsigned int, 16)
TESSERA_VEC1(longlong1, long long, 8)
TESSERA_VEC2(longlong2, long long, 16)
TESSERA_VEC1(ulonglong1, unsigned long long, 8)
TESSERA_VEC2(ulonglong2, unsigned long long, 16)
TESSERA_VEC1(float1, float, 4)
TESSERA_VEC2(float2, float, 8)
TESSERA_VEC3(float3, float)
TESSERA_VEC4(float4, float, 16)
TESSERA_VEC1(double1, double, 8)
TESSERA_VEC2(double2, double, 16)
TESSERA_VEC3(double3, double)

static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 layout");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 layout");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2 layout");
static_assert(sizeof(int4) == 16 && alignof(int4) == 16, "int4 layout");
static_assert(sizeof(uint2) == 8 && alignof(uint2) == 8, "uint2 layout");

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ── TMA tensor maps ──────────────────────────────────────────────────────────────────────
// What the runtime passes for a kernel's `const __grid_constant__ tessera_tensor_map`
// parameter (on a GPU the driver's opaque encoding): the tensor's base address, element bytes,
// columns, rows and row stride in bytes, the box's columns and rows, and its swizzle span.
struct alignas(64) tessera_tensor_map {
    uint64_t base, element_bytes, cols, rows, row_stride_bytes, box_cols, box_rows, swizzle_bytes;
    // a batched tile's 3-D map: the matrices of the leading dimensions and their stride (1 and
    // the matrix's bytes for a 2-D map)
    uint64_t matrices, matrix_stride_bytes;
    uint64_t reserved[6];
};
static_assert(sizeof(tessera_tensor_map) == 128, "the runtime passes 128 bytes");

// ── 16-bit floats: __half and __nv_bfloat16, as <cuda_fp16.h> and <cuda_bf16.h> define them ─
// The storage is the raw bits; every conversion rounds to nearest even the way the device's
// `cvt.rn` does (and CUDA's own host code): a NaN becomes the canonical quiet NaN 0x7fff (sign
// and payload dropped), overflow becomes ±inf, subnormals are kept (no flush to zero).
namespace tessera_sim {

inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// Adds one to `kept` where the dropped bits (`dropped`, of which `half` is the halfway
// pattern) are above half, or exactly half and `kept` is odd: round to nearest even.
inline uint32_t round_even(uint32_t kept, uint32_t dropped, uint32_t half) {
    return kept + (dropped > half || (dropped == half && (kept & 1u)));
}

inline uint16_t f32_to_f16_bits(float f) {
    uint32_t x = f32_bits(f);
    uint32_t u = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
    if (u > 0x7f800000u) return 0x7fffu;             // NaN
    if (u >= 0x477ff000u) return sign | 0x7c00u;      // ≥ 65520, halfway past the largest half: ±inf
    if (u >= 0x38800000u)                             // ≥ 2^-14: a normal half (rounding may carry into the exponent)
        return static_cast<uint16_t>(sign | round_even((u - 0x38000000u) >> 13, u & 0x1fffu, 0x1000u));
    if (u <= 0x33000000u) return static_cast<uint16_t>(sign);  // ≤ 2^-25, half the smallest subnormal: ±0
    // A subnormal half: the significand (implicit bit included) in units of 2^-24.
    uint32_t shift = 126u - (u >> 23), significand = (u & 0x7fffffu) | 0x800000u;
    uint32_t dropped = significand & ((1u << shift) - 1u);
    return static_cast<uint16_t>(sign | round_even(significand >> shift, dropped, 1u << (shift - 1u)));
}

// Exact, but a NaN comes back as the canonical f32 NaN 0x7fffffff, as cvt.f32.f16 gives it.
inline float f16_bits_to_f32(uint16_t h) {
    uint32_t sign = uint32_t{h & 0x8000u} << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) return mantissa ? bits_f32(0x7fffffffu) : bits_f32(sign | 0x7f800000u);
    if (exponent == 0) {
        float magnitude = ldexpf(static_cast<float>(mantissa), -24);  // subnormal or zero: exact
        return sign ? -magnitude : magnitude;
    }
    return bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN
    return static_cast<uint16_t>(round_even(x >> 16, x & 0xffffu, 0x8000u));  // may carry into ±inf
}

// bf16 is the top half of an f32: exact, NaN payloads kept (sm_80's `mov.b32 {0, h}`).
inline float bf16_bits_to_f32(uint16_t h) { return bits_f32(uint32_t{h} << 16); }

// Rounding to f32 "to odd" (truncate, then set the last bit if anything was dropped) keeps
// enough to round once more, to 16 bits, exactly as rounding the exact value would: the
// doubles, 64-bit integers and fused multiply-adds below convert through it without double
// rounding.
inline float odd_f32(float truncated, bool inexact) {
    return inexact ? bits_f32(f32_bits(truncated) | 1u) : truncated;
}

inline float f64_to_f32_odd(double d) {
    float f = static_cast<float>(d);  // nearest; overflows to inf
    if (f != f || static_cast<double>(f) == d) return f;
    if (fabs(static_cast<double>(f)) > fabs(d)) f = nextafterf(f, 0.0f);
    return odd_f32(f, true);
}

inline float u64_to_f32_odd(unsigned long long magnitude, bool negative) {
    int shift = 0;
    bool inexact = false;
    while (magnitude >> 24) {
        inexact |= magnitude & 1u;
        magnitude >>= 1;
        ++shift;
    }
    float f = odd_f32(static_cast<float>(magnitude), inexact);  // < 2^24: exact before the odd bit
    f = ldexpf(f, shift);
    return negative ? -f : f;
}

inline float i64_to_f32_odd(long long v) {
    return u64_to_f32_odd(v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v), v < 0);
}

// a · b + c for 16-bit a, b, c, rounded to odd at f32: the product is exact in double, the
// sum's rounding error is recovered exactly (Knuth's two-sum), and folded into the last bit.
inline float fma_f32_odd(float a, float b, float c) {
    double p = static_cast<double>(a) * b, s = p + c;
    if (s != s || s == HUGE_VAL || s == -HUGE_VAL) return static_cast<float>(s);
    double bb = s - p, error = (p - (s - bb)) + (c - bb);
    if (error != 0 && (error < 0) != (s < 0)) s = nextafter(s, 0.0);  // truncate toward zero
    if (error != 0) {
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        bits |= 1u;
        memcpy(&s, &bits, sizeof s);
    }
    return f64_to_f32_odd(s);
}

}  // namespace tessera_sim

struct __half_raw {
    unsigned short x;
};
struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

// One definition for both types: the raw bits and CUDA's constructors and conversions. The
// constructors from float round to nearest even; from double and integers they convert
// through f32 rounded to odd (still one correct rounding, as the device's cvt gives). One
// difference: a NaN double gives 0x7fff here, where the device's cvt.rn.f16.f64 (and sm_90's
// cvt.rn.bf16.f64) keep some of its payload.
#define TESSERA_16BIT_FLOAT(T, RAW, FROM_F32)                                                \
    struct __attribute__((aligned(2))) T {                                                   \
        unsigned short __x; /* the raw bits (protected in CUDA; use the bit-cast functions) */ \
        T() = default;                                                                       \
        constexpr T(const RAW& raw) : __x(raw.x) {}                                          \
        T(float f) : __x(tessera_sim::FROM_F32(f)) {}                                       \
        T(double d) : __x(tessera_sim::FROM_F32(tessera_sim::f64_to_f32_odd(d))) {}         \
        T(short v) : T(static_cast<long long>(v)) {}                                         \
        T(unsigned short v) : T(static_cast<long long>(v)) {}                                \
        T(int v) : T(static_cast<long long>(v)) {}                                           \
        T(unsigned int v) : T(static_cast<long long>(v)) {}                                  \
        T(long v) : T(static_cast<long long>(v)) {}                                          \
        T(long long v) : __x(tessera_sim::FROM_F32(tessera_sim::i64_to_f32_odd(v))) {}      \
        T(unsigned long v) : T(static_cast<unsigned long long>(v)) {}                        \
        T(unsigned long long v) : __x(tessera_sim::FROM_F32(tessera_sim::u64_to_f32_odd(v, false))) {} \
        operator float() const;                                                              \
        operator RAW() const { return RAW{__x}; }                                            \
        T& operator=(float f) { return *this = T(f); }                                       \
        T& operator=(double d) { return *this = T(d); }                                      \
    };
TESSERA_16BIT_FLOAT(__half, __half_raw, f32_to_f16_bits)
TESSERA_16BIT_FLOAT(__nv_bfloat16, __nv_bfloat16_raw, f32_to_bf16_bits)
#undef TESSERA_16BIT_FLOAT
inline __half::operator float() const { return tessera_sim::f16_bits_to_f32(__x); }
inline __nv_bfloat16::operator float() const { return tessera_sim::bf16_bits_to_f32(__x); }

#define TESSERA_16BIT_PAIR(T2, T, RAW2, RAW)                                                 \
    struct __attribute__((aligned(4))) T2 {                                                  \
        T x, y;                                                                              \
        T2() = default;                                                                      \
        constexpr T2(const T& a, const T& b) : x(a), y(b) {}                                 \
        constexpr T2(const RAW2& raw) : x(RAW{raw.x}), y(RAW{raw.y}) {}                      \
        operator RAW2() const { return RAW2{x.__x, y.__x}; }                                 \
    };
TESSERA_16BIT_PAIR(__half2, __half, __half2_raw, __half_raw)
TESSERA_16BIT_PAIR(__nv_bfloat162, __nv_bfloat16, __nv_bfloat162_raw, __nv_bfloat16_raw)
#undef TESSERA_16BIT_PAIR
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_trivially_copyable<__half>::value, "__half layout");
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2 &&
                  std::is_trivially_copyable<__nv_bfloat16>::value, "__nv_bfloat16 layout");
static_assert(sizeof(__half2) == 4 && alignof(__half2) == 4 && std::is_trivially_copyable<__half2>::value, "__half2 layout");
static_assert(sizeof(__nv_bfloat162) == 4 && alignof(__nv_bfloat162) == 4 &&
                  std::is_trivially_copyable<__nv_bfloat162>::value, "__nv_bfloat162 layout");

// Conversions and bit casts.
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __float2half(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
inline float __bfloat162float(__nv_bfloat16 h) { return static_cast<float>(h); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline __half __ushort_as_half(unsigned short bits) { return __half_raw{bits}; }
inline __half __short_as_half(short bits) { return __half_raw{static_cast<unsigned short>(bits)}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return static_cast<short>(h.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16_raw{bits}; }
inline __nv_bfloat16 __short_as_bfloat16(short bits) { return __nv_bfloat16_raw{static_cast<unsigned short>(bits)}; }

inline __half2 make_half2(__half x, __half y) { return __half2(x, y); }
inline __half2 __halves2half2(__half low, __half high) { return __half2(low, high); }
inline __half2 __half2half2(__half h) { return __half2(h, h); }
inline __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
inline __half2 __floats2half2_rn(float low, float high) { return __half2(__half(low), __half(high)); }
inline __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
inline float2 __half22float2(__half2 h) { return make_float2(static_cast<float>(h.x), static_cast<float>(h.y)); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return static_cast<float>(h.x); }
inline float __high2float(__half2 h) { return static_cast<float>(h.y); }
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) { return __nv_bfloat162(x, y); }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 low, __nv_bfloat16 high) { return __nv_bfloat162(low, high); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 h) { return __nv_bfloat162(h, h); }
inline __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162(__nv_bfloat16(f), __nv_bfloat16(f)); }
inline __nv_bfloat162 __floats2bfloat162_rn(float low, float high) {
    return __nv_bfloat162(__nv_bfloat16(low), __nv_bfloat16(high));
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __nv_bfloat162(__nv_bfloat16(f.x), __nv_bfloat16(f.y)); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return make_float2(static_cast<float>(h.x), static_cast<float>(h.y));
}
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline float __low2float(__nv_bfloat162 h) { return static_cast<float>(h.x); }
inline float __high2float(__nv_bfloat162 h) { return static_cast<float>(h.y); }

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)

// Arithmetic, for both types. + - * / are computed in f32 and rounded once more. That is
// not a double-rounding hazard: f32's 24 bits are at least 2p + 2 for p = 11 (half) and 8
// (bfloat16), and for + - * / rounding to such a format first and then to p bits gives the
// correctly rounded result, which is what the device's add.f16 / fma.rn.bf16 (and its
// division sequences) give. __hfma rounds once (through f32 rounded to odd). A NaN result is
// the canonical NaN 0x7fff. Checked on an H100 against the device: every f32 → half / bfloat16
// conversion, + - * / max min for every pair of operands of both types, and 2^32 random fmas
// agree bit for bit. The functions (hexp, hsqrt, ...) round f32 results of the host's libm:
// like expf, their last bit can differ from the device's approximations.
#define TESSERA_16BIT_ARITHMETIC(T, T2, NAN_BITS, INF_BITS)                                  \
    inline T __hadd(T a, T b) { return T(static_cast<float>(a) + static_cast<float>(b)); }  \
    inline T __hsub(T a, T b) { return T(static_cast<float>(a) - static_cast<float>(b)); }  \
    inline T __hmul(T a, T b) { return T(static_cast<float>(a) * static_cast<float>(b)); }  \
    inline T __hdiv(T a, T b) { return T(static_cast<float>(a) / static_cast<float>(b)); }  \
    inline T __hadd_rn(T a, T b) { return __hadd(a, b); }                                   \
    inline T __hsub_rn(T a, T b) { return __hsub(a, b); }                                   \
    inline T __hmul_rn(T a, T b) { return __hmul(a, b); }                                   \
    inline T __hfma(T a, T b, T c) {                                                         \
        return T(tessera_sim::fma_f32_odd(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c))); \
    }                                                                                        \
    inline bool __hisnan(T a) { return (a.__x & 0x7fffu) > INF_BITS; }                      \
    inline int __hisinf(T a) { return (a.__x & 0x7fffu) == INF_BITS ? (a.__x >> 15 ? -1 : 1) : 0; } \
    /* neg and abs flip or clear the sign; of a NaN they give the canonical NaN */          \
    inline T __hneg(T a) { return __hisnan(a) ? T(T##_raw{NAN_BITS}) : T(T##_raw{static_cast<unsigned short>(a.__x ^ 0x8000u)}); } \
    inline T __habs(T a) { return __hisnan(a) ? T(T##_raw{NAN_BITS}) : T(T##_raw{static_cast<unsigned short>(a.__x & 0x7fffu)}); } \
    /* ordered comparisons (false with a NaN), and the unordered ones (true with a NaN) */  \
    inline bool __heq(T a, T b) { return static_cast<float>(a) == static_cast<float>(b); }  \
    inline bool __hne(T a, T b) { return static_cast<float>(a) < static_cast<float>(b) || static_cast<float>(a) > static_cast<float>(b); } \
    inline bool __hlt(T a, T b) { return static_cast<float>(a) < static_cast<float>(b); }   \
    inline bool __hle(T a, T b) { return static_cast<float>(a) <= static_cast<float>(b); }  \
    inline bool __hgt(T a, T b) { return static_cast<float>(a) > static_cast<float>(b); }   \
    inline bool __hge(T a, T b) { return static_cast<float>(a) >= static_cast<float>(b); }  \
    inline bool __hequ(T a, T b) { return !__hne(a, b); }                                   \
    inline bool __hneu(T a, T b) { return !__heq(a, b); }                                   \
    inline bool __hltu(T a, T b) { return !__hge(a, b); }                                   \
    inline bool __hleu(T a, T b) { return !__hgt(a, b); }                                   \
    inline bool __hgtu(T a, T b) { return !__hle(a, b); }                                   \
    inline bool __hgeu(T a, T b) { return !__hlt(a, b); }                                   \
    /* max / min ignore one NaN (both: the canonical NaN); max(+0, -0) = +0, min = -0 */    \
    inline T __hmax(T a, T b) {                                                              \
        if (__hisnan(a) && __hisnan(b)) return T(T##_raw{NAN_BITS});                         \
        if (__hisnan(a)) return b;                                                           \
        if (__hisnan(b) || __hgt(a, b)) return a;                                            \
        if (__hlt(a, b)) return b;                                                           \
        return a.__x > b.__x ? b : a; /* equal: +0 has the smaller bits */                  \
    }                                                                                        \
    inline T __hmin(T a, T b) {                                                              \
        if (__hisnan(a) && __hisnan(b)) return T(T##_raw{NAN_BITS});                         \
        if (__hisnan(a)) return b;                                                           \
        if (__hisnan(b) || __hlt(a, b)) return a;                                            \
        if (__hgt(a, b)) return b;                                                           \
        return a.__x > b.__x ? a : b;                                                        \
    }                                                                                        \
    inline T __hmax_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T(T##_raw{NAN_BITS}) : __hmax(a, b); } \
    inline T __hmin_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T(T##_raw{NAN_BITS}) : __hmin(a, b); } \
    inline T operator+(const T& a, const T& b) { return __hadd(a, b); }                     \
    inline T operator-(const T& a, const T& b) { return __hsub(a, b); }                     \
    inline T operator*(const T& a, const T& b) { return __hmul(a, b); }                     \
    inline T operator/(const T& a, const T& b) { return __hdiv(a, b); }                     \
    inline T& operator+=(T& a, const T& b) { return a = __hadd(a, b); }                     \
    inline T& operator-=(T& a, const T& b) { return a = __hsub(a, b); }                     \
    inline T& operator*=(T& a, const T& b) { return a = __hmul(a, b); }                     \
    inline T& operator/=(T& a, const T& b) { return a = __hdiv(a, b); }                     \
    inline T& operator++(T& a) { return a = __hadd(a, T(1.0f)); }                           \
    inline T& operator--(T& a) { return a = __hsub(a, T(1.0f)); }                           \
    inline T operator++(T& a, int) { T old = a; ++a; return old; }                          \
    inline T operator--(T& a, int) { T old = a; --a; return old; }                          \
    inline T operator+(const T& a) { return a; }                                            \
    inline T operator-(const T& a) { return __hneg(a); }                                    \
    inline bool operator==(const T& a, const T& b) { return __heq(a, b); }                  \
    inline bool operator!=(const T& a, const T& b) { return __hneu(a, b); }                 \
    inline bool operator<(const T& a, const T& b) { return __hlt(a, b); }                   \
    inline bool operator<=(const T& a, const T& b) { return __hle(a, b); }                  \
    inline bool operator>(const T& a, const T& b) { return __hgt(a, b); }                   \
    inline bool operator>=(const T& a, const T& b) { return __hge(a, b); }                  \
    inline T hexp(T a) { return T(expf(static_cast<float>(a))); }                           \
    inline T hexp2(T a) { return T(exp2f(static_cast<float>(a))); }                         \
    inline T hexp10(T a) { return T(powf(10.0f, static_cast<float>(a))); }                  \
    inline T hlog(T a) { return T(logf(static_cast<float>(a))); }                           \
    inline T hlog2(T a) { return T(log2f(static_cast<float>(a))); }                         \
    inline T hlog10(T a) { return T(log10f(static_cast<float>(a))); }                       \
    inline T hsqrt(T a) { return T(sqrtf(static_cast<float>(a))); }                         \
    inline T hrsqrt(T a) { return T(1.0f / sqrtf(static_cast<float>(a))); }                 \
    inline T hrcp(T a) { return T(1.0f / static_cast<float>(a)); }                          \
    inline T hsin(T a) { return T(sinf(static_cast<float>(a))); }                           \
    inline T hcos(T a) { return T(cosf(static_cast<float>(a))); }                           \
    inline T htanh(T a) { return T(tanhf(static_cast<float>(a))); }                         \
    inline T hfloor(T a) { return T(floorf(static_cast<float>(a))); }                       \
    inline T hceil(T a) { return T(ceilf(static_cast<float>(a))); }                         \
    inline T htrunc(T a) { return T(truncf(static_cast<float>(a))); }                       \
    inline T hrint(T a) { return T(nearbyintf(static_cast<float>(a))); }                    \
    /* the pairs, lane by lane */                                                            \
    inline T2 __hadd2(T2 a, T2 b) { return T2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }       \
    inline T2 __hsub2(T2 a, T2 b) { return T2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }       \
    inline T2 __hmul2(T2 a, T2 b) { return T2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }       \
    inline T2 __h2div(T2 a, T2 b) { return T2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }       \
    inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
    inline T2 __hneg2(T2 a) { return T2(__hneg(a.x), __hneg(a.y)); }                        \
    inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                        \
    inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }       \
    inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }       \
    inline T2 operator+(const T2& a, const T2& b) { return __hadd2(a, b); }                 \
    inline T2 operator-(const T2& a, const T2& b) { return __hsub2(a, b); }                 \
    inline T2 operator*(const T2& a, const T2& b) { return __hmul2(a, b); }                 \
    inline T2 operator/(const T2& a, const T2& b) { return __h2div(a, b); }                 \
    inline T2& operator+=(T2& a, const T2& b) { return a = __hadd2(a, b); }                 \
    inline T2& operator-=(T2& a, const T2& b) { return a = __hsub2(a, b); }                 \
    inline T2& operator*=(T2& a, const T2& b) { return a = __hmul2(a, b); }                 \
    inline T2& operator/=(T2& a, const T2& b) { return a = __h2div(a, b); }                 \
    inline T2 operator-(const T2& a) { return __hneg2(a); }
TESSERA_16BIT_ARITHMETIC(__half, __half2, 0x7fffu, 0x7c00u)
TESSERA_16BIT_ARITHMETIC(__nv_bfloat16, __nv_bfloat162, 0x7fffu, 0x7f80u)
#undef TESSERA_16BIT_ARITHMETIC

// The bounds of the `tessera_shared` section (defined by the linker when it exists).
extern "C" char __start_tessera_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_tessera_shared[] __attribute__((weak, visibility("hidden")));

// ── The simulated machine ────────────────────────────────────────────────────────────────
namespace tessera_sim {

constexpr uint32_t kMaxThreads = 1024;
constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kAbiVersion = 4;
constexpr uint32_t kMaxClusterBlocks = 8;

// Kept in step with runtime/src/sim/library.rs.
enum Status : int32_t {
    kOk = 0,
    kBarrierDivergence = 1,  // some threads wait at __syncthreads, others finished
    kWarpDivergence = 2,     // a warp-synchronous op waits for a lane that never comes
    kFault = 3,              // SIGSEGV / SIGBUS / SIGFPE / SIGILL in kernel code
    kStackOverflow = 4,      // a fiber ran off its stack (into its guard page)
    kTrap = 5,               // __trap(), or a failed assert()
    kBadLaunch = 6,          // argument count, block size, ...
    kOutOfMemory = 7,        // no memory for the fibers' stacks
};

// What the runtime asks for. Kept in step with runtime/src/sim/library.rs.
struct Launch {
    void* const* args;  // args[i] points at the value of parameter i
    uint32_t arg_count;
    uint32_t grid[3];
    uint32_t block[3];
    const uint32_t* thread_order;  // a permutation of 0..threads per block
    const uint32_t* block_order;   // a permutation of 0..blocks in the grid
    uint64_t stack_bytes;          // per fiber
    uint32_t async_copies_at_issue;  // cp.async lands at issue (1) or as late as allowed: the wait (0)
    uint32_t cluster[3];           // blocks of a cluster along x, y, z (1, 1, 1: no clusters)
};

// What happened. Kept in step with runtime/src/sim/library.rs.
struct Report {
    int32_t status;
    int32_t signal;
    uint64_t address;
    uint32_t block[3];   // the block that failed
    uint32_t thread[3];  // the thread that was running, or one that never arrived
    uint32_t waiting;    // threads (lanes) waiting at the barrier
    uint32_t finished;   // threads that had finished
    uint32_t other[3];   // a thread that was waiting
    uint32_t mask;       // the warp op's mask
    int32_t code;        // the fault's si_code (SI_KERNEL: a general-protection fault)
    char message[400];
};

enum class State : uint8_t { Ready, AtBarrier, AtWarpSync, AtMbarrier, AtClusterBarrier, Done };

struct Fiber {
#if TESSERA_SIM_ASM_SWITCH
    void* sp;
#else
    ucontext_t context;
#endif
    uint3 index;
    State state;
    uint32_t sync_mask;  // lanes it waits for at a warp-synchronous op
    const uint32_t* mbarrier_phase;  // the phase counter of the mbarrier it waits on
    uint32_t mbarrier_parity;        // the parity of the phase it waits for
};

// A cp.async copy in flight: `valid` bytes from `global`, zeros up to `bytes`, into `shared`,
// in this thread's commit group `group`.
struct AsyncCopy {
    void* shared;
    const void* global;
    uint32_t bytes;
    uint32_t valid;
    uint32_t group;
};

// An asynchronous operation a thread issued that has not run yet, in the group it was committed
// to: a wgmma (deferred to its wait under the orders that land the copies at issue) or a TMA
// store (deferred to the wait that lets it go).
struct PendingAsync {
    std::function<void()> run;
    uint32_t group;
};

// Runs the operations of `pending` in all but the newest `keep` of the `committed` groups,
// oldest first, and keeps the rest (what wgmma.wait_group and cp.async.bulk.wait_group let go).
inline void run_all_but_newest(std::vector<PendingAsync>& pending, uint32_t committed, uint32_t keep) {
    std::vector<std::function<void()>> due;
    size_t kept = 0;
    for (auto& operation : pending) {
        if (operation.group + keep < committed) {
            due.push_back(std::move(operation.run));
        } else {
            pending[kept++] = std::move(operation);
        }
    }
    pending.resize(kept);
    for (auto& run : due) run();  // (a wgmma synchronises the warp's lanes: no references into `pending` held)
}

// What one block of a cluster leaves behind while another block of the cluster runs: its
// threads (fibers) and their scheduling state, and its shared memory.
struct SavedBlock {
    std::vector<Fiber> fibers;
    uint32_t arrived = 0, finished = 0, barrier_generation = 0, vote[2] = {0, 0}, cluster_arrived = 0;
    std::vector<uint32_t> warp_waiting, warp_ops, async_groups, wgmma_groups;
    std::vector<uint64_t> slot[2];
    std::vector<const char*> slot_op[2];
    std::vector<uint8_t> read_parity;
    std::vector<std::vector<AsyncCopy>> async_copies;
    std::vector<std::vector<PendingAsync>> wgmma_pending;
    std::vector<uint32_t> tma_store_groups;
    std::vector<std::vector<PendingAsync>> tma_stores;
    std::vector<uint8_t> shared;  // the tessera_shared section
    uint3 index{0, 0, 0};
    bool started = false, done = false;
};

struct Machine {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    // launch
    void (*body)(void*) = nullptr;
    void* body_arg = nullptr;
    const Launch* launch = nullptr;
    Report* report = nullptr;
    uint32_t threads = 0;
    uint32_t current = 0;
    bool in_fiber = false;
    // fibers and their stacks (kept between launches)
    Fiber fibers[kMaxThreads];
    uint8_t* arena = nullptr;
    size_t arena_bytes = 0;
    size_t stack_bytes = 0;
    size_t page = 4096;
#if TESSERA_SIM_ASM_SWITCH
    void* main_sp = nullptr;
#else
    ucontext_t main_context;
#endif
    // block barrier
    uint32_t arrived = 0;
    uint32_t finished = 0;
    uint32_t barrier_generation = 0;
    uint32_t vote[2] = {0, 0};
    // warps: who waits, and each thread's exchange slots (double-buffered by op parity), with
    // the tensor-core operation it is at (null for shuffles, votes and __syncwarp)
    uint32_t warp_waiting[kMaxThreads / kWarpSize];
    uint32_t warp_ops[kMaxThreads];
    uint64_t slot[2][kMaxThreads];
    const char* slot_op[2][kMaxThreads];
    // the slot parity of each thread's deposit as of the latest release: lanes whose earlier
    // ops had other masks may have done different numbers of them, so each deposit is read
    // at its own depositor's parity
    uint8_t read_parity[kMaxThreads];
    // each thread's cp.async copies in flight, and how many groups it has committed
    std::vector<AsyncCopy> async_copies[kMaxThreads];
    uint32_t async_groups[kMaxThreads];
    // each thread's wgmma still running (deferred to its wait under the orders that land the
    // copies at issue), and how many wgmma groups it has committed
    std::vector<PendingAsync> wgmma_pending[kMaxThreads];
    uint32_t wgmma_groups[kMaxThreads];
    // each thread's TMA stores not yet done (run, reading shared memory, at the wait that
    // lets them go), and how many store groups it has committed
    std::vector<PendingAsync> tma_stores[kMaxThreads];
    uint32_t tma_store_groups[kMaxThreads];
    // clusters: the blocks of one run in turns, each until all its threads wait at the cluster
    // barrier (or finished); the others' state and shared memory wait in `saved`, by rank
    uint32_t cluster_blocks = 1;
    uint32_t cluster_rank = 0;     // the running block's rank in its cluster
    uint32_t cluster_arrived = 0;  // the running block's threads at the cluster barrier
    uint64_t resumes = 0;          // fiber switches so far: a cluster's round without one is stuck
    SavedBlock saved[kMaxClusterBlocks];
    // the way back to the entry point from a fault
    sigjmp_buf escape;
    uint8_t* alt_stack = nullptr;
    uint64_t clock = 0;
};

inline Machine machine;

inline Machine& m() { return machine; }

}  // namespace tessera_sim

// ── Index built-ins (set by the scheduler before each thread resumes) ───────────────────
inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

// ── Context switch ───────────────────────────────────────────────────────────────────────
#if TESSERA_SIM_ASM_SWITCH
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack,
// stores the stack pointer in *save and continues on `next` (System V x86-64). The cost is a
// few nanoseconds, where swapcontext makes a system call for the signal mask.
extern "C" void tessera_sim_switch(void** save, void* next);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl tessera_sim_switch\n"
    ".hidden tessera_sim_switch\n"
    ".type tessera_sim_switch,@function\n"
    "tessera_sim_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    subq $8, %rsp\n"
    "    stmxcsr (%rsp)\n"
    "    fnstcw 4(%rsp)\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    ldmxcsr (%rsp)\n"
    "    fldcw 4(%rsp)\n"
    "    addq $8, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size tessera_sim_switch, .-tessera_sim_switch\n");
#endif

namespace tessera_sim {

inline uint32_t linear(uint3 i) {
    return i.x + blockDim.x * (i.y + blockDim.y * i.z);
}

inline uint3 unlinear(uint32_t t) {
    uint32_t x = t % blockDim.x, rest = t / blockDim.x;
    return uint3{x, rest % blockDim.y, rest / blockDim.y};
}

// Back to the scheduler; returns when the scheduler resumes this fiber.
inline void yield() {
    Machine& s = m();
#if TESSERA_SIM_ASM_SWITCH
    tessera_sim_switch(&s.fibers[s.current].sp, s.main_sp);
#else
    swapcontext(&s.fibers[s.current].context, &s.main_context);
#endif
}

inline void land_async_copies(uint32_t pending_groups);
[[noreturn]] inline void stop_thread(Status status, const char* message);

[[noreturn]] inline void fiber_main() {
    Machine& s = m();
    s.body(s.body_arg);
    land_async_copies(0);  // a thread's copies complete even if it never waited for them
    if (!s.wgmma_pending[s.current].empty())
        stop_thread(kTrap, "a thread ended with wgmma groups it never waited for (wgmma.wait_group)");
    if (!s.tma_stores[s.current].empty())
        stop_thread(kTrap, "a thread ended with TMA stores it never waited for (cp.async.bulk.wait_group): "
                           "the shared memory they read goes with the block");
    s.fibers[s.current].state = State::Done;
    s.finished++;
    yield();  // never resumed
    __builtin_unreachable();
}

#if !TESSERA_SIM_ASM_SWITCH
inline void fiber_main_ucontext() { fiber_main(); }
#endif

inline uint8_t* stack_of(uint32_t t) {
    Machine& s = m();
    return s.arena + (s.cluster_rank * s.threads + t) * (s.stack_bytes + s.page) + s.page;
}

// A fresh stack for thread t whose first resume enters fiber_main.
inline void start_fiber(uint32_t t) {
    Machine& s = m();
    Fiber& f = s.fibers[t];
    uint8_t* top = stack_of(t) + s.stack_bytes;
#if TESSERA_SIM_ASM_SWITCH
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;  // fiber_main's return address: ends backtraces, is never used
    *--sp = reinterpret_cast<void*>(&fiber_main);
    for (int r = 0; r < 6; ++r) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
    --sp;
    uint32_t control[2] = {0x1f80u, 0x037fu};  // default MXCSR and x87 control word
    memcpy(sp, control, sizeof control);
    f.sp = sp;
#else
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = stack_of(t);
    f.context.uc_stack.ss_size = s.stack_bytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, &fiber_main_ucontext, 0);
#endif
    f.index = unlinear(t);
    f.state = State::Ready;
    f.sync_mask = 0;
    s.async_copies[t].clear();
    s.async_groups[t] = 0;
    s.wgmma_pending[t].clear();
    s.wgmma_groups[t] = 0;
    s.tma_stores[t].clear();
    s.tma_store_groups[t] = 0;
}

inline void resume(uint32_t t) {
    Machine& s = m();
    s.resumes++;
    s.current = t;
    threadIdx = s.fibers[t].index;
    s.in_fiber = true;
#if TESSERA_SIM_ASM_SWITCH
    tessera_sim_switch(&s.main_sp, s.fibers[t].sp);
#else
    swapcontext(&s.main_context, &s.fibers[t].context);
#endif
    s.in_fiber = false;
}

inline void copy_index(uint32_t out[3], uint3 v) {
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
}

inline void fill_report(Status status, const char* message) {
    Machine& s = m();
    s.report->status = status;
    copy_index(s.report->block, blockIdx);
    copy_index(s.report->thread, s.in_fiber ? s.fibers[s.current].index : uint3{0, 0, 0});
    snprintf(s.report->message, sizeof s.report->message, "%s", message);
}

// A fault: called from the signal handler (on the alternate stack), so it jumps back to the
// entry point; the fibers' stacks are abandoned and rebuilt by the next block.
[[noreturn]] inline void escape_fault(Status status, const char* message) {
    fill_report(status, message);
    siglongjmp(m().escape, 1);
}

// A trap or failed assert in a thread: ends that thread like a return would, and the
// scheduler stops the launch when it sees the report. (No jump between stacks.)
[[noreturn]] inline void stop_thread(Status status, const char* message) {
    Machine& s = m();
    fill_report(status, message);
    s.fibers[s.current].state = State::Done;
    yield();  // never resumed
    __builtin_unreachable();
}

// ── Block barrier ────────────────────────────────────────────────────────────────────────
inline int block_barrier(int predicate) {
    Machine& s = m();
    uint32_t parity = s.barrier_generation & 1;
    s.vote[parity] += predicate != 0;
    s.fibers[s.current].state = State::AtBarrier;
    s.arrived++;
    yield();
    return static_cast<int>(s.vote[parity]);
}

// ── Warp-synchronous operations ──────────────────────────────────────────────────────────
inline uint32_t lane() { return m().current % kWarpSize; }

inline uint32_t warp_lanes(uint32_t warp) {
    uint32_t first = warp * kWarpSize, n = m().threads;
    uint32_t count = n - first < kWarpSize ? n - first : kWarpSize;
    return count == 32 ? 0xffffffffu : ((1u << count) - 1u);
}

// Deposits `bits` in this thread's slot and waits until every lane of `mask` has arrived at a
// warp-synchronous op; then `warp_read` gives the others' deposits. `op` names a tensor-core
// operation (null for the others), which every lane of the warp must be at together.
// A released lane reads its deposits before the scheduler's next release (it runs in the very
// next round), and no lane deposits twice in between, so two slots per thread suffice.
inline void warp_exchange(uint32_t mask, uint64_t bits, const char* op = nullptr) {
    Machine& s = m();
    uint32_t self = s.current;
    uint32_t parity = s.warp_ops[self]++ & 1;
    s.slot[parity][self] = bits;
    s.slot_op[parity][self] = op;
    Fiber& f = s.fibers[self];
    f.state = State::AtWarpSync;
    f.sync_mask = mask | (1u << lane());
    s.warp_waiting[self / kWarpSize] |= 1u << lane();
    yield();
}

// The deposit of `source_lane` of this warp at the exchange just made, or all ones (NaN / -1)
// when that lane did not take part: the GPU leaves that value undefined.
inline uint64_t warp_read(uint32_t mask, uint32_t source_lane) {
    Machine& s = m();
    uint32_t self = s.current;
    uint32_t warp = self / kWarpSize;
    if (source_lane >= kWarpSize || !((mask | (1u << lane())) & warp_lanes(warp) & (1u << source_lane)))
        return ~uint64_t{0};
    uint32_t source = warp * kWarpSize + source_lane;
    return s.slot[s.read_parity[source]][source];
}

template <class T>
inline uint64_t to_bits(T value) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                  "warp shuffles move values of at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof(T));
    return bits;
}

template <class T>
inline T from_bits(uint64_t bits) {
    T value;
    memcpy(&value, &bits, sizeof(T));
    return value;
}

template <class T>
inline T shuffle(uint32_t mask, T var, int source, int width, int mode) {
    uint32_t w = width <= 0 || width > 32 ? 32u : static_cast<uint32_t>(width);
    uint32_t me = lane();
    uint32_t segment = me - me % w;
    uint32_t from = me;
    switch (mode) {
        case 0:  // index
            from = segment + static_cast<uint32_t>(source) % w;
            break;
        case 1:  // up
            from = me % w >= static_cast<uint32_t>(source) ? me - static_cast<uint32_t>(source) : me;
            break;
        case 2:  // down
            from = me % w + static_cast<uint32_t>(source) < w ? me + static_cast<uint32_t>(source) : me;
            break;
        default:  // xor: lanes of a later segment give their own value
            from = me ^ static_cast<uint32_t>(source);
            if (from >= segment + w) from = me;
            break;
    }
    warp_exchange(mask, to_bits(var));
    return from_bits<T>(warp_read(mask, from));
}

inline uint32_t ballot(uint32_t mask, int predicate) {
    warp_exchange(mask, predicate != 0);
    uint32_t result = 0;
    for (uint32_t l = 0; l < kWarpSize; ++l)
        if (((mask | (1u << lane())) & (1u << l)) && warp_read(mask, l) == 1) result |= 1u << l;
    return result;
}

// ── The scheduler ────────────────────────────────────────────────────────────────────────
// The lanes of `t`'s mask that wait at a warp-synchronous op with another mask: as in CUDA,
// every lane a mask names must execute the op with that same mask (lanes 16-31 at a full-warp
// shuffle do not pair with lanes 0-15 at a half-warp one).
inline uint32_t other_masks(uint32_t warp, uint32_t t) {
    Machine& s = m();
    uint32_t exists = warp_lanes(warp), mine = s.fibers[t].sync_mask & exists, others = 0;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
        const Fiber& f = s.fibers[warp * kWarpSize + l];
        if ((mine & (1u << l)) && f.state == State::AtWarpSync && (f.sync_mask & exists) != mine) others |= 1u << l;
    }
    return others;
}

// Releases every lane waiting at a warp-synchronous op whose mask's lanes all wait at one
// with the same mask.
inline bool release_warps() {
    Machine& s = m();
    bool released = false;
    uint32_t warps = (s.threads + kWarpSize - 1) / kWarpSize;
    for (uint32_t w = 0; w < warps; ++w) {
        uint32_t waiting = s.warp_waiting[w];
        if (!waiting) continue;
        uint32_t exists = warp_lanes(w);
        uint32_t release = 0;
        // usually every waiting lane has the same mask, and no lane needs other_masks
        uint32_t first = s.fibers[w * kWarpSize + __builtin_ctz(waiting)].sync_mask & exists;
        bool one_mask = true;
        for (uint32_t l = 0; l < kWarpSize; ++l)
            if ((waiting & (1u << l)) && (s.fibers[w * kWarpSize + l].sync_mask & exists) != first) one_mask = false;
        for (uint32_t l = 0; l < kWarpSize; ++l) {
            if (!(waiting & (1u << l))) continue;
            uint32_t t = w * kWarpSize + l;
            s.read_parity[t] = (s.warp_ops[t] - 1) & 1;  // its latest deposit, which any lane released now reads
            if ((s.fibers[t].sync_mask & exists & ~waiting) == 0 && (one_mask || other_masks(w, t) == 0))
                release |= 1u << l;
        }
        for (uint32_t l = 0; l < kWarpSize; ++l)
            if (release & (1u << l)) s.fibers[w * kWarpSize + l].state = State::Ready;
        s.warp_waiting[w] &= ~release;
        released |= release != 0;
    }
    return released;
}

// Threads waiting on an mbarrier whose phase has completed can go on.
inline bool release_mbarrier_waiters() {
    Machine& s = m();
    bool released = false;
    for (uint32_t t = 0; t < s.threads; ++t) {
        Fiber& f = s.fibers[t];
        if (f.state == State::AtMbarrier && (*f.mbarrier_phase & 1u) != f.mbarrier_parity) {
            f.state = State::Ready;
            released = true;
        }
    }
    return released;
}

inline void release_barrier() {
    Machine& s = m();
    for (uint32_t t = 0; t < s.threads; ++t) s.fibers[t].state = State::Ready;
    s.arrived = 0;
    s.barrier_generation++;
    s.vote[s.barrier_generation & 1] = 0;
}

// Nothing can run: say who waits where, and who is missing.
inline void diagnose() {
    Machine& s = m();
    Report* r = s.report;
    copy_index(r->block, blockIdx);
    r->finished = s.finished;
    uint32_t warps = (s.threads + kWarpSize - 1) / kWarpSize;
    for (uint32_t w = 0; w < warps; ++w) {
        uint32_t waiting = s.warp_waiting[w];
        if (!waiting) continue;
        for (uint32_t l = 0; l < kWarpSize; ++l) {
            if (!(waiting & (1u << l))) continue;
            Fiber& f = s.fibers[w * kWarpSize + l];
            uint32_t missing = f.sync_mask & warp_lanes(w) & ~waiting;
            if (uint32_t others = missing ? 0 : other_masks(w, w * kWarpSize + l)) {
                uint32_t other = static_cast<uint32_t>(__builtin_ctz(others));
                Fiber& at = s.fibers[w * kWarpSize + other];
                r->status = kWarpDivergence;
                r->waiting = static_cast<uint32_t>(__builtin_popcount(waiting));
                r->mask = f.sync_mask;
                copy_index(r->other, f.index);
                copy_index(r->thread, at.index);
                snprintf(r->message, sizeof r->message,
                         "warp %u: lane %u waits at a warp-synchronous op with mask 0x%08x, lane %u at one "
                         "with mask 0x%08x: every lane a mask names must execute the op with that same mask",
                         w, l, f.sync_mask, other, at.sync_mask);
                return;
            }
            if (!missing) continue;
            uint32_t absent = static_cast<uint32_t>(__builtin_ctz(missing));
            Fiber& gone = s.fibers[w * kWarpSize + absent];
            r->status = kWarpDivergence;
            r->waiting = static_cast<uint32_t>(__builtin_popcount(waiting));
            r->mask = f.sync_mask;
            copy_index(r->other, f.index);
            copy_index(r->thread, gone.index);
            snprintf(r->message, sizeof r->message,
                     "warp %u: lane %u waits at a warp-synchronous op (mask 0x%08x) for lane %u, "
                     "which %s",
                     w, l, f.sync_mask, absent,
                     gone.state == State::Done ? "has finished" : "waits at __syncthreads");
            return;
        }
    }
    uint32_t on_mbarrier = 0;
    for (uint32_t t = 0; t < s.threads; ++t) on_mbarrier += s.fibers[t].state == State::AtMbarrier;
    if (on_mbarrier) {
        r->status = kBarrierDivergence;
        r->waiting = on_mbarrier;
        for (uint32_t t = 0; t < s.threads; ++t)
            if (s.fibers[t].state == State::AtMbarrier) copy_index(r->other, s.fibers[t].index);
        snprintf(r->message, sizeof r->message,
                 "%u thread(s) wait on an mbarrier phase that never completes (%u finished, %u at __syncthreads)",
                 on_mbarrier, s.finished, s.arrived);
        return;
    }
    r->status = kBarrierDivergence;
    r->waiting = s.arrived;
    for (uint32_t t = 0; t < s.threads; ++t) {
        if (s.fibers[t].state == State::Done) copy_index(r->thread, s.fibers[t].index);
        if (s.fibers[t].state == State::AtBarrier) copy_index(r->other, s.fibers[t].index);
    }
    snprintf(r->message, sizeof r->message,
             "%u thread(s) wait at __syncthreads while %u finished without reaching it",
             s.arrived, s.finished);
}

// ── cp.async ─────────────────────────────────────────────────────────────────────────────
// Under the runtime's forward order a copy lands as late as the program allows (at the wait
// that covers its group), under the others at issue: code that reads a stage before waiting
// for it, or refills a stage other threads still read, computes different outputs under the
// two — a race.
inline void land(const AsyncCopy& copy) {
    if (copy.valid > 0) memcpy(copy.shared, copy.global, copy.valid);
    memset(static_cast<uint8_t*>(copy.shared) + copy.valid, 0, copy.bytes - copy.valid);
}

// Lands every copy of the calling thread except those of its newest `pending_groups` groups.
inline void land_async_copies(uint32_t pending_groups) {
    Machine& s = m();
    std::vector<AsyncCopy>& copies = s.async_copies[s.current];
    uint32_t committed = s.async_groups[s.current];
    size_t kept = 0;
    for (const AsyncCopy& copy : copies) {
        if (copy.group + pending_groups < committed) {
            land(copy);
        } else {
            copies[kept++] = copy;
        }
    }
    copies.resize(kept);
}

inline void async_copy(void* shared, const void* global, uint32_t bytes, int valid) {
    Machine& s = m();
    char message[160];
    if (valid < 0 || static_cast<uint32_t>(valid) > bytes) {
        snprintf(message, sizeof message, "cp.async of %u bytes told to read %d of them", bytes, valid);
        stop_thread(kTrap, message);
    }
    uintptr_t to = reinterpret_cast<uintptr_t>(shared);
    uintptr_t from = reinterpret_cast<uintptr_t>(global);
    if (to % bytes != 0 || (valid > 0 && from % bytes != 0)) {
        snprintf(message, sizeof message, "cp.async of %u bytes at a misaligned address (shared %#lx, global %#lx)",
                 bytes, static_cast<unsigned long>(to), static_cast<unsigned long>(from));
        stop_thread(kTrap, message);
    }
    AsyncCopy copy{shared, global, bytes, static_cast<uint32_t>(valid), s.async_groups[s.current]};
    if (s.launch->async_copies_at_issue) {
        land(copy);
    } else {
        s.async_copies[s.current].push_back(copy);
    }
}

inline void poison_shared() {
    uintptr_t start = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    uintptr_t stop = reinterpret_cast<uintptr_t>(__stop_tessera_shared);
    if (start && stop > start) memset(__start_tessera_shared, 0xff, stop - start);
}

// Starts block `b` (linear index): blockIdx, poisoned shared memory, fresh fibers.
inline void start_block(uint32_t b) {
    Machine& s = m();
    const Launch& l = *s.launch;
    blockIdx = uint3{b % l.grid[0], (b / l.grid[0]) % l.grid[1], b / (l.grid[0] * l.grid[1])};
    poison_shared();
    for (uint32_t t = 0; t < s.threads; ++t) start_fiber(t);
    s.arrived = 0;
    s.finished = 0;
    s.cluster_arrived = 0;
    s.barrier_generation = 0;
    s.vote[0] = s.vote[1] = 0;
    memset(s.warp_waiting, 0, sizeof s.warp_waiting);
    memset(s.warp_ops, 0, sizeof(uint32_t) * s.threads);
}

enum class BlockEnd { Finished, AtClusterBarrier, Stalled, Failed };

// Runs the started block until it finishes, or every thread that has not finished waits at
// the cluster barrier; in a cluster, until its threads wait only on mbarriers that another
// block of the cluster may complete (Stalled: a TMA multicast or a remote arrival); Failed
// (with the report filled) when it cannot go on.
inline BlockEnd step_block() {
    Machine& s = m();
    const Launch& l = *s.launch;
    for (;;) {
        for (uint32_t k = 0; k < s.threads; ++k) {
            uint32_t t = l.thread_order[k];
            if (s.fibers[t].state == State::Ready) resume(t);
            if (s.report->status != kOk) return BlockEnd::Failed;  // a trap or failed assert
        }
        if (s.finished == s.threads) return BlockEnd::Finished;
        if (release_warps()) continue;
        if (release_mbarrier_waiters()) continue;
        if (s.arrived == s.threads) {
            release_barrier();
            continue;
        }
        if (s.cluster_arrived > 0 && s.cluster_arrived + s.finished == s.threads) return BlockEnd::AtClusterBarrier;
        if (s.cluster_blocks > 1) {
            for (uint32_t t = 0; t < s.threads; ++t)
                if (s.fibers[t].state == State::AtMbarrier) return BlockEnd::Stalled;
        }
        diagnose();
        return BlockEnd::Failed;
    }
}

// The running block's threads at the cluster barrier go on.
inline void release_cluster_barrier() {
    Machine& s = m();
    for (uint32_t t = 0; t < s.threads; ++t)
        if (s.fibers[t].state == State::AtClusterBarrier) s.fibers[t].state = State::Ready;
    s.cluster_arrived = 0;
}

// Runs one block to completion; false (with the report filled) when it cannot finish. A
// cluster barrier in a block that is a cluster of its own waits for that block's threads only.
inline bool run_block(uint32_t b) {
    start_block(b);
    for (;;) {
        switch (step_block()) {
            case BlockEnd::Finished: return true;
            case BlockEnd::Failed: return false;
            case BlockEnd::AtClusterBarrier: release_cluster_barrier(); break;
            case BlockEnd::Stalled: diagnose(); return false;  // (only in clusters of 2 or more)
        }
    }
}

// ── Clusters ─────────────────────────────────────────────────────────────────────────────
inline std::pair<uint8_t*, size_t> shared_section() {
    uintptr_t start = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    uintptr_t stop = reinterpret_cast<uintptr_t>(__stop_tessera_shared);
    if (!start || stop <= start) return {nullptr, 0};
    return {reinterpret_cast<uint8_t*>(start), stop - start};
}

// Moves the running block's state into `b` (the Machine's copy is then stale).
inline void save_block(SavedBlock& b) {
    Machine& s = m();
    uint32_t n = s.threads, warps = (n + kWarpSize - 1) / kWarpSize;
    b.fibers.assign(s.fibers, s.fibers + n);
    b.arrived = s.arrived;
    b.finished = s.finished;
    b.barrier_generation = s.barrier_generation;
    b.vote[0] = s.vote[0];
    b.vote[1] = s.vote[1];
    b.cluster_arrived = s.cluster_arrived;
    b.warp_waiting.assign(s.warp_waiting, s.warp_waiting + warps);
    b.warp_ops.assign(s.warp_ops, s.warp_ops + n);
    b.async_groups.assign(s.async_groups, s.async_groups + n);
    b.wgmma_groups.assign(s.wgmma_groups, s.wgmma_groups + n);
    b.tma_store_groups.assign(s.tma_store_groups, s.tma_store_groups + n);
    for (int p = 0; p < 2; ++p) {
        b.slot[p].assign(s.slot[p], s.slot[p] + n);
        b.slot_op[p].assign(s.slot_op[p], s.slot_op[p] + n);
    }
    b.read_parity.assign(s.read_parity, s.read_parity + n);
    b.async_copies.resize(n);
    b.wgmma_pending.resize(n);
    b.tma_stores.resize(n);
    for (uint32_t t = 0; t < n; ++t) {
        std::swap(b.async_copies[t], s.async_copies[t]);
        std::swap(b.wgmma_pending[t], s.wgmma_pending[t]);
        std::swap(b.tma_stores[t], s.tma_stores[t]);
    }
    auto [section, bytes] = shared_section();
    b.shared.assign(section, section + bytes);
    b.index = blockIdx;
}

// Makes `b` (saved by save_block) the running block again.
inline void restore_block(SavedBlock& b) {
    Machine& s = m();
    uint32_t n = s.threads;
    std::copy(b.fibers.begin(), b.fibers.end(), s.fibers);
    s.arrived = b.arrived;
    s.finished = b.finished;
    s.barrier_generation = b.barrier_generation;
    s.vote[0] = b.vote[0];
    s.vote[1] = b.vote[1];
    s.cluster_arrived = b.cluster_arrived;
    std::copy(b.warp_waiting.begin(), b.warp_waiting.end(), s.warp_waiting);
    std::copy(b.warp_ops.begin(), b.warp_ops.end(), s.warp_ops);
    std::copy(b.async_groups.begin(), b.async_groups.end(), s.async_groups);
    std::copy(b.wgmma_groups.begin(), b.wgmma_groups.end(), s.wgmma_groups);
    std::copy(b.tma_store_groups.begin(), b.tma_store_groups.end(), s.tma_store_groups);
    for (int p = 0; p < 2; ++p) {
        std::copy(b.slot[p].begin(), b.slot[p].end(), s.slot[p]);
        std::copy(b.slot_op[p].begin(), b.slot_op[p].end(), s.slot_op[p]);
    }
    std::copy(b.read_parity.begin(), b.read_parity.end(), s.read_parity);
    for (uint32_t t = 0; t < n; ++t) {
        std::swap(b.async_copies[t], s.async_copies[t]);
        std::swap(b.wgmma_pending[t], s.wgmma_pending[t]);
        std::swap(b.tma_stores[t], s.tma_stores[t]);
    }
    if (!b.shared.empty()) memcpy(shared_section().first, b.shared.data(), b.shared.size());
    blockIdx = b.index;
}

inline void cluster_barrier() {
    Machine& s = m();
    s.fibers[s.current].state = State::AtClusterBarrier;
    s.cluster_arrived++;
    yield();
}

// Runs the blocks of one cluster (`members`: linear block indices by rank) to completion, in
// turns (`turns`: ranks in the order they take them): each block runs until all its threads
// wait at the cluster barrier, then the next; when all wait, all go on. False (with the report
// filled) when they cannot finish.
inline bool run_cluster(const uint32_t* members, const uint32_t* turns, uint32_t count) {
    Machine& s = m();
    int live = -1;
    auto enter = [&](uint32_t rank) {
        if (live == static_cast<int>(rank)) return;
        if (live >= 0) save_block(s.saved[live]);
        s.cluster_rank = rank;
        if (s.saved[rank].started) {
            restore_block(s.saved[rank]);
        } else {
            start_block(members[rank]);
            s.saved[rank].started = true;
        }
        live = static_cast<int>(rank);
    };
    for (uint32_t r = 0; r < count; ++r) s.saved[r].started = s.saved[r].done = false;
    for (;;) {
        bool stalled = false;
        const uint64_t resumed = s.resumes;
        for (uint32_t k = 0; k < count; ++k) {
            uint32_t rank = turns[k];
            if (s.saved[rank].done) continue;
            enter(rank);
            BlockEnd end = step_block();
            if (end == BlockEnd::Failed) return false;
            s.saved[rank].done = end == BlockEnd::Finished;
            stalled |= end == BlockEnd::Stalled;
        }
        uint32_t done = 0;
        for (uint32_t r = 0; r < count; ++r) done += s.saved[r].done;
        if (done == count) return true;
        if (stalled) {
            // a block waits on an mbarrier another may complete: go round again while any ran
            if (s.resumes != resumed) continue;
            diagnose();
            return false;
        }
        // every block not done waits at the cluster barrier; all the cluster's threads must
        for (uint32_t r = 0; r < count; ++r) {
            uint32_t finished = static_cast<int>(r) == live ? s.finished : s.saved[r].finished;
            if (s.saved[r].done || finished > 0) {
                enter(r);
                Report* report = s.report;
                report->status = kBarrierDivergence;
                copy_index(report->block, blockIdx);
                report->finished = s.finished;
                snprintf(report->message, sizeof report->message,
                         "threads wait at the cluster barrier while %u thread(s) of block (%u, %u, %u), rank %u "
                         "of the cluster, finished without reaching it",
                         s.finished, blockIdx.x, blockIdx.y, blockIdx.z, r);
                return false;
            }
        }
        for (uint32_t r = 0; r < count; ++r) {
            enter(r);
            release_cluster_barrier();
        }
    }
}

// Runs the grid's clusters in the order the block order first names one of their blocks;
// a cluster's blocks take their turns in block order too. False when one cannot finish.
inline bool run_clusters(const Launch& l) {
    Machine& s = m();
    const uint32_t* c = l.cluster;
    uint32_t count = s.cluster_blocks;
    uint64_t blocks = uint64_t{l.grid[0]} * l.grid[1] * l.grid[2];
    std::vector<uint32_t> position(blocks);
    for (uint64_t k = 0; k < blocks; ++k) position[l.block_order[k]] = static_cast<uint32_t>(k);
    std::vector<uint8_t> seen(blocks / count, 0);
    uint32_t members[kMaxClusterBlocks], turns[kMaxClusterBlocks];
    for (uint64_t k = 0; k < blocks; ++k) {
        uint32_t b = l.block_order[k];
        uint32_t x = b % l.grid[0], y = (b / l.grid[0]) % l.grid[1], z = b / (l.grid[0] * l.grid[1]);
        uint32_t x0 = x - x % c[0], y0 = y - y % c[1], z0 = z - z % c[2];
        uint64_t id = x0 / c[0] + uint64_t{l.grid[0] / c[0]} * (y0 / c[1] + uint64_t{l.grid[1] / c[1]} * (z0 / c[2]));
        if (seen[id]) continue;
        seen[id] = 1;
        for (uint32_t rank = 0; rank < count; ++rank) {
            uint32_t mx = x0 + rank % c[0], my = y0 + rank / c[0] % c[1], mz = z0 + rank / (c[0] * c[1]);
            members[rank] = mx + l.grid[0] * (my + l.grid[1] * mz);
            turns[rank] = rank;
        }
        std::sort(turns, turns + count,
                  [&](uint32_t a, uint32_t b2) { return position[members[a]] < position[members[b2]]; });
        if (!run_cluster(members, turns, count)) return false;
    }
    return true;
}

// Fibers' stacks, each with a guard page below it, reused between the blocks of a launch.
inline bool ensure_stacks(uint32_t threads, size_t stack_bytes) {
    Machine& s = m();
    s.page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    stack_bytes = (stack_bytes + s.page - 1) / s.page * s.page;
    size_t need = static_cast<size_t>(threads) * (stack_bytes + s.page);
    if (s.arena && s.stack_bytes == stack_bytes && s.arena_bytes >= need) return true;
    if (s.arena) munmap(s.arena, s.arena_bytes);
    s.arena = nullptr;
    void* arena = mmap(nullptr, need, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED) return false;
    s.arena = static_cast<uint8_t*>(arena);
    s.arena_bytes = need;
    s.stack_bytes = stack_bytes;
    for (uint32_t t = 0; t < threads; ++t)
        if (mprotect(s.arena + t * (stack_bytes + s.page), s.page, PROT_NONE) != 0) return false;
    return true;
}

// Whether `address` lies in one of the fibers' guard pages.
inline bool in_guard_page(uintptr_t address) {
    Machine& s = m();
    if (!s.arena) return false;
    uintptr_t base = reinterpret_cast<uintptr_t>(s.arena);
    if (address < base || address >= base + s.arena_bytes) return false;
    return (address - base) % (s.stack_bytes + s.page) < s.page;
}

inline int run(void (*body)(void*), void* body_arg, const Launch* launch, Report* report) {
    Machine& s = m();
    memset(report, 0, sizeof *report);
    uint64_t threads = uint64_t{launch->block[0]} * launch->block[1] * launch->block[2];
    uint32_t cluster_blocks = 1;
    for (int d = 0; d < 3; ++d) {
        uint32_t size = launch->cluster[d];
        if (size == 0 || launch->grid[d] % size != 0) {
            report->status = kBadLaunch;
            snprintf(report->message, sizeof report->message,
                     "a grid of %u x %u x %u blocks in clusters of %u x %u x %u: each grid dimension must be a "
                     "multiple of the cluster's", launch->grid[0], launch->grid[1], launch->grid[2],
                     launch->cluster[0], launch->cluster[1], launch->cluster[2]);
            return report->status;
        }
        cluster_blocks *= size;
    }
    if (cluster_blocks > kMaxClusterBlocks) {
        report->status = kBadLaunch;
        snprintf(report->message, sizeof report->message, "clusters of %u blocks; the simulator runs 1 to %u",
                 cluster_blocks, kMaxClusterBlocks);
        return report->status;
    }
    if (threads == 0 || threads > kMaxThreads) {
        report->status = kBadLaunch;
        snprintf(report->message, sizeof report->message,
                 "a block of %u x %u x %u threads; the simulator runs 1 to %u", launch->block[0],
                 launch->block[1], launch->block[2], kMaxThreads);
        return report->status;
    }
    pthread_mutex_lock(&s.lock);
    s.body = body;
    s.body_arg = body_arg;
    s.launch = launch;
    s.report = report;
    s.threads = static_cast<uint32_t>(threads);
    s.cluster_blocks = cluster_blocks;
    s.cluster_rank = 0;
    s.in_fiber = false;
    blockDim = dim3(launch->block[0], launch->block[1], launch->block[2]);
    gridDim = dim3(launch->grid[0], launch->grid[1], launch->grid[2]);
    if (!ensure_stacks(s.threads * cluster_blocks, launch->stack_bytes)) {
        report->status = kOutOfMemory;
        snprintf(report->message, sizeof report->message,
                 "could not map %u fiber stacks of %llu bytes", s.threads * cluster_blocks,
                 static_cast<unsigned long long>(launch->stack_bytes));
        pthread_mutex_unlock(&s.lock);
        return report->status;
    }
    // Faults are handled on an alternate stack: a fiber that overflows its own has none left.
    const size_t alt_bytes = 64 * 1024;
    if (!s.alt_stack) s.alt_stack = static_cast<uint8_t*>(malloc(alt_bytes));
    stack_t alt{}, previous{};
    alt.ss_sp = s.alt_stack;
    alt.ss_size = alt_bytes;
    bool alt_set = s.alt_stack && sigaltstack(&alt, &previous) == 0;
    uint64_t blocks = uint64_t{launch->grid[0]} * launch->grid[1] * launch->grid[2];
    if (sigsetjmp(s.escape, 1) == 0) {
        if (cluster_blocks > 1) {
            run_clusters(*launch);
        } else {
            for (uint64_t k = 0; k < blocks; ++k) {
                if (!run_block(launch->block_order[k])) break;
            }
        }
    }
    s.in_fiber = false;
    if (alt_set) sigaltstack(&previous, nullptr);
    // each fiber's guard page splits the arena into two mappings; a test process that keeps
    // dozens of kernels' libraries loaded (a cluster's blocks' fibers counted twice) ran out of
    // the 65530 mappings Linux allows, so the arena goes with the launch
    if (s.arena) munmap(s.arena, s.arena_bytes);
    s.arena = nullptr;
    s.arena_bytes = 0;
    pthread_mutex_unlock(&s.lock);
    return report->status;
}

// ── Calling an extern "C" kernel with `void** args` ──────────────────────────────────────
template <class... P, size_t... I>
inline void call_kernel(void (*kernel)(P...), void* const* args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

template <class... P>
inline int run_kernel(void (*kernel)(P...), const Launch* launch, Report* report) {
    if (launch->arg_count != sizeof...(P)) {
        memset(report, 0, sizeof *report);
        report->status = kBadLaunch;
        snprintf(report->message, sizeof report->message, "%u arguments for %zu parameters",
                 launch->arg_count, sizeof...(P));
        return report->status;
    }
    struct Call {
        void (*kernel)(P...);
        void* const* args;
    } call{kernel, launch->args};
    auto body = [](void* p) {
        Call* c = static_cast<Call*>(p);
        call_kernel(c->kernel, c->args, std::index_sequence_for<P...>{});
    };
    return run(body, &call, launch, report);
}

// The parameter types as the runtime names them: "const f32*,f32*,i32".
template <class T>
constexpr const char* scalar_name() {
    if (std::is_same<T, float>::value) return "f32";
    if (std::is_same<T, double>::value) return "f64";
    if (std::is_same<T, int>::value) return "i32";
    if (std::is_same<T, unsigned int>::value) return "u32";
    if (std::is_same<T, long long>::value || std::is_same<T, long>::value) return "i64";
    if (std::is_same<T, unsigned long long>::value || std::is_same<T, unsigned long>::value)
        return "u64";
    if (std::is_same<T, short>::value) return "i16";
    if (std::is_same<T, unsigned short>::value) return "u16";
    if (std::is_same<T, signed char>::value || std::is_same<T, char>::value) return "i8";
    if (std::is_same<T, unsigned char>::value) return "u8";
    if (std::is_same<T, bool>::value) return "bool";
    if (std::is_same<T, __half>::value) return "f16";
    if (std::is_same<T, __nv_bfloat16>::value) return "bf16";
    if (std::is_same<T, tessera_tensor_map>::value) return "tensor_map";
    return "?";
}

template <class T>
inline void append_type(char* out, size_t size) {
    char item[64];
    if constexpr (std::is_pointer<T>::value) {
        using Pointee = std::remove_pointer_t<T>;
        snprintf(item, sizeof item, "%s%s*", std::is_const<Pointee>::value ? "const " : "",
                 scalar_name<std::remove_cv_t<Pointee>>());
    } else {
        snprintf(item, sizeof item, "%s", scalar_name<std::remove_cv_t<T>>());
    }
    if (out[0]) strncat(out, ",", size - strlen(out) - 1);
    strncat(out, item, size - strlen(out) - 1);
}

template <class... P>
inline const char* signature(void (*)(P...)) {
    static char text[1024];
    text[0] = 0;
    (append_type<P>(text, sizeof text), ...);
    return text;
}

}  // namespace tessera_sim

// ── Synchronization ──────────────────────────────────────────────────────────────────────
inline void __syncthreads() { tessera_sim::block_barrier(0); }
// cp.async as tessera's emitted helpers name it (the GPU versions are inline PTX).
template <int BYTES>
inline void tessera_async_copy(void* shared, const void* global, int valid) {
    // 2: a lone 16-bit element, which the GPU copies through a register (cp.async cannot);
    // landing it with the group is the weaker promise, so a read before the wait still shows
    static_assert(BYTES == 2 || BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
    tessera_sim::async_copy(shared, global, BYTES, valid);
}
// A shared-memory address: here simply the pointer (the GPU's is a 32-bit shared-window address).
using tessera_shared_ref = char*;
inline tessera_shared_ref tessera_shared_address(const void* shared) { return static_cast<char*>(const_cast<void*>(shared)); }
template <int BYTES, class T>
inline void tessera_async_copy_to(tessera_shared_ref shared, int offset, const T* global, int valid) {
    tessera_async_copy<BYTES>(shared + offset * static_cast<int>(sizeof(T)), global, valid);
}
namespace tessera_sim {
// Where `local` (`bytes` at an address in the running block's shared memory) lies in the shared
// memory of the cluster's block `rank`: the running block's own section, or the copy another
// block left when its turn ended (TMA multicast and remote mbarrier arrivals write there).
inline uint8_t* in_rank(const void* local, uint32_t rank, size_t bytes, const char* what) {
    Machine& s = m();
    char message[200];
    if (rank >= s.cluster_blocks) {
        snprintf(message, sizeof message, "%s for rank %u in a cluster of %u blocks", what, rank, s.cluster_blocks);
        stop_thread(kTrap, message);
    }
    auto [section, size] = shared_section();
    uintptr_t at = reinterpret_cast<uintptr_t>(local), start = reinterpret_cast<uintptr_t>(section);
    if (at < start || at + bytes > start + size) {
        snprintf(message, sizeof message, "%s at %#lx, outside shared memory", what, static_cast<unsigned long>(at));
        stop_thread(kTrap, message);
    }
    if (rank == s.cluster_rank) return reinterpret_cast<uint8_t*>(at);
    SavedBlock& other = s.saved[rank];
    if (!other.started || other.done) {
        snprintf(message, sizeof message, "%s for rank %u, which has %s: a cluster barrier keeps the blocks together",
                 what, rank, other.started ? "finished" : "not started");
        stop_thread(kTrap, message);
    }
    return other.shared.data() + (at - start);
}
}  // namespace tessera_sim
inline void tessera_async_commit() { tessera_sim::m().async_groups[tessera_sim::m().current]++; }
template <int PENDING>
inline void tessera_async_wait() { tessera_sim::land_async_copies(PENDING); }
// mbarriers (a warp-specialised pipeline): an arrival count per phase, the bytes of TMA copies
// the phase still waits for (its transaction count), and the phases completed. A phase completes
// when every expected arrival is in and its transaction count is back at zero.
struct tessera_mbarrier {
    uint32_t expected, pending, phase;
    int64_t transaction_bytes;
};
inline void tessera_mbarrier_init(tessera_mbarrier* bar, int arrivals) {
    bar->expected = bar->pending = static_cast<uint32_t>(arrivals);
    bar->phase = 0;
    bar->transaction_bytes = 0;
}
inline void tessera_mbarrier_init_fence() {}
inline void tessera_mbarrier_complete_if_done(tessera_mbarrier* bar) {
    // a peer's multicast may land before this block's expect_tx (the count then runs below
    // zero, as the hardware's may); with every arrival in, more bytes than expected is an error
    if (bar->pending == 0 && bar->transaction_bytes < 0)
        tessera_sim::stop_thread(tessera_sim::kTrap, "TMA copies landed more bytes than the mbarrier expected");
    if (bar->pending == 0 && bar->transaction_bytes == 0) {
        bar->phase++;
        bar->pending = bar->expected;
    }
}
inline void tessera_mbarrier_arrive(tessera_mbarrier* bar) {
    if (bar->pending == 0 || bar->pending > bar->expected)
        tessera_sim::stop_thread(tessera_sim::kTrap,
                                 "an arrival on an mbarrier that was not initialised, or whose arrivals are all in");
    --bar->pending;
    tessera_mbarrier_complete_if_done(bar);
}
// mbarrier.arrive.expect_tx: the phase also waits for `bytes` more of TMA copies, then this arrives.
inline void tessera_mbarrier_expect_bytes(tessera_mbarrier* bar, unsigned bytes) {
    bar->transaction_bytes += bytes;
    tessera_mbarrier_arrive(bar);
}
namespace tessera_sim {
inline bool in_shared_memory(uintptr_t address, size_t bytes);
}
// TMA: prefetching the map into the copy engine's cache changes nothing here.
inline void tessera_tma_prefetch(const tessera_tensor_map*) {}
// cp.async.bulk.tensor.2d ... .mbarrier::complete_tx::bytes: the box whose first element is
// column `col`, row `row` of the map's tensor, written to `shared` row after row (box_cols
// elements each) with the map's swizzle applied to the shared address bits (the 16-byte chunk
// bits 4.. XOR the line bits 7.., as the hardware does, so the pattern follows the buffer's
// alignment), elements outside the tensor zero; then its bytes count on `bar`. It lands at
// issue; wgmma reads a stage only at its wait, so a stage refilled too early still shows.
inline void tessera_tma_load_3d(void* shared, const tessera_tensor_map* map, int col, int row, int batch,
                                tessera_mbarrier* bar);
inline void tessera_tma_load(void* shared, const tessera_tensor_map* map, int col, int row, tessera_mbarrier* bar) {
    tessera_tma_load_3d(shared, map, col, row, 0, bar);
}
namespace tessera_sim {
// Writes the box to `shared` in the shared memory of the cluster's block `rank` (the running
// block's own for a plain copy); returns its bytes. The swizzle follows the running block's
// addresses, which every block's copy of the section shares.
inline uint64_t tma_box(void* shared, const tessera_tensor_map* map, int col, int row, int batch, uint32_t rank);
}
// cp.async.bulk.tensor.3d: the same box in matrix `batch` of a batched map (rows past the
// matrix's last are outside the tensor: zeros, not the next matrix's rows).
inline void tessera_tma_load_3d(void* shared, const tessera_tensor_map* map, int col, int row, int batch,
                                tessera_mbarrier* bar) {
    const uint64_t bytes = tessera_sim::tma_box(shared, map, col, row, batch, tessera_sim::m().cluster_rank);
    bar->transaction_bytes -= static_cast<int64_t>(bytes);
    tessera_mbarrier_complete_if_done(bar);
}
// cp.async.bulk.tensor.2d ... .multicast::cluster: the box lands at `shared` in every block of
// the cluster that `mask` names (bit r: rank r), its bytes counted on each one's mbarrier at
// `bar`'s place.
inline void tessera_tma_load_multicast(void* shared, const tessera_tensor_map* map, int col, int row,
                                       tessera_mbarrier* bar, unsigned short mask) {
    for (uint32_t rank = 0; rank < 16; ++rank) {
        if (!(mask & (1u << rank))) continue;
        const uint64_t bytes = tessera_sim::tma_box(shared, map, col, row, 0, rank);
        tessera_mbarrier* there = reinterpret_cast<tessera_mbarrier*>(
            tessera_sim::in_rank(bar, rank, sizeof(tessera_mbarrier), "a TMA multicast's mbarrier"));
        there->transaction_bytes -= static_cast<int64_t>(bytes);
        tessera_mbarrier_complete_if_done(there);
    }
}
// mapa + mbarrier.arrive.shared::cluster: arrives on the mbarrier at `bar`'s place in the
// shared memory of the cluster's block `rank`.
inline void tessera_mbarrier_arrive_in(tessera_mbarrier* bar, int rank) {
    tessera_mbarrier_arrive(reinterpret_cast<tessera_mbarrier*>(
        tessera_sim::in_rank(bar, static_cast<uint32_t>(rank), sizeof(tessera_mbarrier), "a remote mbarrier arrival")));
}
namespace tessera_sim {
// The elements of a box of `map` whose first element is column `col`, row `row` of matrix
// `batch`, in shared memory from `start` on: f(byte offset from `start` — the swizzle applied
// to the address bits, 16-byte chunk bits 4.. XOR line bits 7.., as the hardware does — and
// the element's address in the tensor, or 0 where it lies outside the tensor).
template <class F>
inline void for_each_box_element(const tessera_tensor_map& map, uintptr_t start, int col, int row, int batch, F f) {
    const uint64_t element = map.element_bytes, row_bytes = map.box_cols * element;
    // the swizzle span's 16-byte chunks: 2, 4 or 8 of them, XORed with as many line bits
    const uintptr_t chunk_mask = map.swizzle_bytes ? map.swizzle_bytes / 16 - 1 : 0;
    for (uint64_t r = 0; r < map.box_rows; ++r) {
        for (uint64_t c = 0; c < map.box_cols; ++c) {
            const uintptr_t linear = start + r * row_bytes + c * element;
            const uintptr_t address = linear ^ (((linear >> 7) & chunk_mask) << 4);
            const int64_t tensor_row = static_cast<int64_t>(row) + static_cast<int64_t>(r);
            const int64_t tensor_col = static_cast<int64_t>(col) + static_cast<int64_t>(c);
            const bool inside = tensor_row >= 0 && tensor_col >= 0 && static_cast<uint64_t>(tensor_row) < map.rows &&
                                static_cast<uint64_t>(tensor_col) < map.cols && batch >= 0 &&
                                static_cast<uint64_t>(batch) < map.matrices;
            const uint64_t at = map.base + static_cast<uint64_t>(batch) * map.matrix_stride_bytes +
                                static_cast<uint64_t>(tensor_row) * map.row_stride_bytes +
                                static_cast<uint64_t>(tensor_col) * element;
            f(address - start, inside ? at : 0);
        }
    }
}
}  // namespace tessera_sim
// cp.async.bulk.tensor.2d.global.shared::cta: the box of the map's shape at `shared` (in the
// map's swizzle) written to the tensor from column `col`, row `row` on, what lies outside it
// left alone. It reads shared memory as late as the program allows — at the wait that lets its
// group go — so a staging buffer refilled before that wait shows in the numbers.
inline void tessera_tma_store(const tessera_tensor_map* map, int col, int row, const void* shared) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(shared);
    if (start % 128 != 0 || (map->swizzle_bytes == 128 && start % 1024 != 0))
        tessera_sim::stop_thread(tessera_sim::kTrap, "a TMA store from shared memory that is not 128-byte aligned "
                                                     "(1024 for the 128-byte swizzle)");
    if (!tessera_sim::in_shared_memory(start, map->box_cols * map->element_bytes * map->box_rows))
        tessera_sim::stop_thread(tessera_sim::kTrap, "a TMA store from an address outside shared memory");
    const tessera_tensor_map copy = *map;
    auto run = [copy, col, row, start]() {
        tessera_sim::for_each_box_element(copy, start, col, row, 0, [&](uintptr_t offset, uint64_t to) {
            if (to) memcpy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(start + offset), copy.element_bytes);
        });
    };
    tessera_sim::Machine& s = tessera_sim::m();
    s.tma_stores[s.current].push_back({run, s.tma_store_groups[s.current]});
}
inline void tessera_tma_store_commit() { tessera_sim::m().tma_store_groups[tessera_sim::m().current]++; }
namespace tessera_sim {
// Runs the calling thread's TMA stores of all but its newest `keep` committed groups.
inline void run_tma_stores(uint32_t keep) {
    Machine& s = m();
    run_all_but_newest(s.tma_stores[s.current], s.tma_store_groups[s.current], keep);
}
}  // namespace tessera_sim
// cp.async.bulk.wait_group.read N: the stores of all but the newest N groups have read their
// shared memory (here: have run).
template <int N>
inline void tessera_tma_store_wait_read() { tessera_sim::run_tma_stores(N); }
// cp.async.bulk.wait_group N: the same, their writes done.
template <int N>
inline void tessera_tma_store_wait() { tessera_sim::run_tma_stores(N); }
inline uint64_t tessera_sim::tma_box(void* shared, const tessera_tensor_map* map, int col, int row, int batch,
                                     uint32_t rank) {
    const uint64_t element = map->element_bytes, box_cols = map->box_cols, box_rows = map->box_rows;
    const uint64_t row_bytes = box_cols * element, bytes = row_bytes * box_rows;
    const uintptr_t start = reinterpret_cast<uintptr_t>(shared);
    if (start % 128 != 0 || (map->swizzle_bytes == 128 && start % 1024 != 0))
        tessera_sim::stop_thread(tessera_sim::kTrap, "a TMA copy to shared memory that is not 128-byte aligned "
                                                     "(1024 for the 128-byte swizzle)");
    if (!tessera_sim::in_shared_memory(start, bytes))
        tessera_sim::stop_thread(tessera_sim::kTrap, "a TMA copy to an address outside shared memory");
    if (map->swizzle_bytes != 0 && row_bytes > map->swizzle_bytes)
        tessera_sim::stop_thread(tessera_sim::kTrap, "a TMA box whose rows are wider than its swizzle span");
    uint8_t* destination = tessera_sim::in_rank(shared, rank, bytes, "a TMA copy");
    // (the swizzle permutes within the box, so the offsets are the same in every block's copy)
    tessera_sim::for_each_box_element(*map, start, col, row, batch, [&](uintptr_t offset, uint64_t from) {
        if (from) {
            memcpy(destination + offset, reinterpret_cast<const void*>(from), element);
        } else {
            memset(destination + offset, 0, element);
        }
    });
    return bytes;
}
// Phase `parity` has completed once the phase counter's parity differs from it.
inline void tessera_mbarrier_wait(tessera_mbarrier* bar, int parity) {
    tessera_sim::Machine& s = tessera_sim::m();
    while ((bar->phase & 1u) == static_cast<uint32_t>(parity)) {
        tessera_sim::Fiber& f = s.fibers[s.current];
        f.state = tessera_sim::State::AtMbarrier;
        f.mbarrier_phase = &bar->phase;
        f.mbarrier_parity = static_cast<uint32_t>(parity);
        tessera_sim::yield();
    }
}
// cp.async.mbarrier.arrive: this thread's copies land, then it arrives.
inline void tessera_async_arrive_on(tessera_mbarrier* bar) {
    tessera_async_commit();
    tessera_async_wait<0>();
    tessera_mbarrier_arrive(bar);
}
// setmaxnreg: registers are not the simulator's concern.
template <int REGISTERS>
inline void tessera_registers_down() {}
template <int REGISTERS>
inline void tessera_registers_up() {}
// ── Tensor cores: ldmatrix and mma.sync, as tessera's emitted helpers name them ──────────
// Warp-collective, like on the GPU: all 32 lanes of a full warp take part in the same
// instruction. Each lane deposits its operands (64 bits per exchange) and then computes its
// own results from every lane's deposits. A lane that has finished, waits at __syncthreads, or
// sits at a different warp-synchronous operation is an Error::WarpDivergence, never a hang or
// a silent mix of values.
namespace tessera_sim {

// Another lane of this warp is at a different warp-synchronous operation than `op`.
[[noreturn]] inline void warp_op_mismatch(const char* op, uint32_t other_lane, const char* other_op) {
    Machine& s = m();
    uint32_t warp = s.current / kWarpSize;
    char message[300];
    snprintf(message, sizeof message,
             "warp %u: lane %u is at %s while lane %u is at %s: every lane of the warp must execute "
             "the same warp-collective instruction together",
             warp, lane(), op, other_lane, other_op ? other_op : "a shuffle, vote or __syncwarp");
    fill_report(kWarpDivergence, message);
    Report* r = s.report;
    copy_index(r->other, s.fibers[s.current].index);
    copy_index(r->thread, s.fibers[warp * kWarpSize + other_lane].index);
    r->mask = 0xffffffffu;
    r->waiting = kWarpSize;
    s.fibers[s.current].state = State::Done;
    yield();  // never resumed
    __builtin_unreachable();
}

// Exchanges `bits` among all 32 lanes of this warp, the `step`th exchange of the collective
// operation `op`: `all[l]` is lane l's deposit, for the lanes of `wanted`. The first exchange
// checks that every lane is at `op` (which then holds for the instruction's later ones).
inline void warp_gather(const char* op, uint32_t step, uint64_t bits, uint64_t (&all)[kWarpSize],
                        uint32_t wanted = 0xffffffffu) {
    Machine& s = m();
    uint32_t warp = s.current / kWarpSize;
    if (step == 0 && warp_lanes(warp) != 0xffffffffu) {
        char message[200];
        snprintf(message, sizeof message, "%s needs all 32 lanes of a warp; warp %u of this block has %d threads",
                 op, warp, __builtin_popcount(warp_lanes(warp)));
        stop_thread(kTrap, message);
    }
    warp_exchange(0xffffffffu, bits, op);
    const uint32_t first = warp * kWarpSize;
    for (uint32_t l = 0; step == 0 && l < kWarpSize; ++l) {
        const char* other = s.slot_op[s.read_parity[first + l]][first + l];
        if (other != op && (!other || strcmp(other, op) != 0)) warp_op_mismatch(op, l, other);
    }
    for (uint32_t l = 0; l < kWarpSize; ++l)
        if (wanted & (1u << l)) all[l] = s.slot[s.read_parity[first + l]][first + l];
}

inline bool in_shared_memory(uintptr_t address, size_t bytes) {
    uintptr_t start = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    uintptr_t stop = reinterpret_cast<uintptr_t>(__stop_tessera_shared);
    return start && address >= start && address + bytes <= stop;
}

// ldmatrix.sync.aligned.m8n8.x{MATRICES}[.trans].shared.b16. Lanes 8j .. 8j + 7 give the
// addresses of the rows of matrix j (16 bytes each, 8 b16 elements); r[j] of lane l receives,
// low half first, row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1; with .trans, elements
// [2 (l % 4)][l / 4] and [2 (l % 4) + 1][l / 4] (row, column of the stored matrix). Memory is
// read as it is (poisoned shared memory reads as NaN), between two exchanges: after every lane
// has arrived (its earlier stores done) and before any lane goes on (its later stores not yet).
template <int MATRICES, bool TRANS>
inline void ldmatrix(unsigned* r, const void* row, const char* op) {
    uint32_t me = lane();
    uintptr_t address = reinterpret_cast<uintptr_t>(row);
    if (me < 8u * MATRICES) {
        char message[200];
        if (address % 16 != 0) {
            snprintf(message, sizeof message, "%s: lane %u gave the row address %#lx, which is not 16-byte aligned",
                     op, me, static_cast<unsigned long>(address));
            stop_thread(kTrap, message);
        }
        if (!in_shared_memory(address, 16)) {
            snprintf(message, sizeof message, "%s: lane %u gave the row address %#lx, which is not in shared memory",
                     op, me, static_cast<unsigned long>(address));
            stop_thread(kTrap, message);
        }
    }
    uint64_t rows[kWarpSize];
    warp_gather(op, 0, address, rows);
    for (uint32_t j = 0; j < MATRICES; ++j) {
        const uint64_t* matrix = rows + 8 * j;
        uint16_t low, high;
        if (TRANS) {
            memcpy(&low, reinterpret_cast<const char*>(matrix[2 * (me % 4)]) + 2 * (me / 4), 2);
            memcpy(&high, reinterpret_cast<const char*>(matrix[2 * (me % 4) + 1]) + 2 * (me / 4), 2);
        } else {
            const char* source = reinterpret_cast<const char*>(matrix[me / 4]) + 4 * (me % 4);
            memcpy(&low, source, 2);
            memcpy(&high, source + 2, 2);
        }
        r[j] = uint32_t{low} | uint32_t{high} << 16;
    }
    warp_gather(op, 1, 0, rows, 0);  // no lane goes on (and stores) before every lane has read
}

template <class T>
inline float element_to_float(uint16_t bits) {
    return std::is_same<T, __half>::value ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
}

// The 16-bit value `which` (0: low half) of register `reg` of `lane`, from two gathers of
// 64 bits that hold registers 0-1 and 2-3 (the second unused for B).
inline uint16_t fragment_half(const uint64_t (&low)[kWarpSize], const uint64_t (&high)[kWarpSize], uint32_t lane,
                              uint32_t reg, uint32_t which) {
    uint64_t pair = reg < 2 ? low[lane] : high[lane];
    return static_cast<uint16_t>(pair >> (32 * (reg % 2) + 16 * which));
}

// What "bit-exact per instruction" means here: each output element is
//     sum = acc_in; for k in 0 .. K: sum = fmaf(a_k, b_k, sum)
// in f32, in that order, with a_k and b_k converted to f32 exactly. (The products of 16-bit or
// tf32 inputs are exact in f32, so each step rounds once.) The GPU's tensor cores add the
// products in another order and precision, so their last bits can differ (on an H100, random
// f16 inputs gave results up to 80 ulp from this chain, within 3.4e-7 relative of the exact
// sum); the simulation is deterministic and the same on every host. The layouts below, ldmatrix's (all six forms) and the tf32 truncation were checked
// against an H100 with inputs whose products sum exactly: bit for bit.
//
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32, T = __half or
// __nv_bfloat16. With g = lane / 4, t = lane % 4 (the PTX ISA's "Matrix Fragments for
// mma.m16n8k16 with floating point type"), low half = lower column or k:
//   A (16 × 16, row-major): a[0] = (row g, cols 2t, 2t + 1), a[1] = (row g + 8, same cols),
//                           a[2] = (row g, cols 2t + 8, 2t + 9), a[3] = (row g + 8, cols 2t + 8, 2t + 9)
//   B (16 × 8, column):     b[0] = (k 2t, 2t + 1; col g), b[1] = (k 2t + 8, 2t + 9; col g)
//   C, D (16 × 8 f32):      acc[0] = (g, 2t), acc[1] = (g, 2t + 1), acc[2] = (g + 8, 2t), acc[3] = (g + 8, 2t + 1)
template <class T>
inline void mma_m16n8k16(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2], const char* op) {
    // this lane's rows g, g + 8 of A are in lanes 4g .. 4g + 3, its columns 2t, 2t + 1 of B in
    // lanes 8t .. 8t + 7
    uint32_t g = lane() / 4, t = lane() % 4;
    uint64_t a01[kWarpSize], a23[kWarpSize], b01[kWarpSize];
    warp_gather(op, 0, a[0] | uint64_t{a[1]} << 32, a01, 0xfu << (4 * g));
    warp_gather(op, 1, a[2] | uint64_t{a[3]} << 32, a23, 0xfu << (4 * g));
    warp_gather(op, 2, b[0] | uint64_t{b[1]} << 32, b01, 0xffu << (8 * t));
    for (uint32_t i = 0; i < 4; ++i) {
        uint32_t row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float sum = acc[i];
        for (uint32_t k = 0; k < 16; ++k) {
            // A(row, k): lane (row % 8) · 4 + (k % 8) / 2, register row / 8 + 2 (k / 8)
            float x = element_to_float<T>(fragment_half(a01, a23, (row % 8) * 4 + (k % 8) / 2, row / 8 + 2 * (k / 8), k % 2));
            // B(k, col): lane col · 4 + (k % 8) / 2, register k / 8
            float y = element_to_float<T>(fragment_half(b01, b01, col * 4 + (k % 8) / 2, k / 8, k % 2));
            sum = fmaf(x, y, sum);
        }
        acc[i] = sum;
    }
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32. Each register holds an f32 whose low 13
// mantissa bits the tensor core ignores: the inputs are those f32s with the bits cleared.
//   A (16 × 8): a[0] = (g, t), a[1] = (g + 8, t), a[2] = (g, t + 4), a[3] = (g + 8, t + 4)
//   B (8 × 8):  b[0] = (k t, col g), b[1] = (k t + 4, col g)
//   C, D as for m16n8k16.
inline float tf32(uint32_t bits) { return bits_f32(bits & 0xffffe000u); }

inline void mma_m16n8k8_tf32(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    const char* op = "mma.m16n8k8.tf32";
    uint32_t g = lane() / 4, t = lane() % 4;
    uint64_t a01[kWarpSize], a23[kWarpSize], b01[kWarpSize];
    warp_gather(op, 0, a[0] | uint64_t{a[1]} << 32, a01, 0xfu << (4 * g));
    warp_gather(op, 1, a[2] | uint64_t{a[3]} << 32, a23, 0xfu << (4 * g));
    warp_gather(op, 2, b[0] | uint64_t{b[1]} << 32, b01, 0xffu << (8 * t));
    auto word = [](const uint64_t (&low)[kWarpSize], const uint64_t (&high)[kWarpSize], uint32_t lane, uint32_t reg) {
        uint64_t pair = reg < 2 ? low[lane] : high[lane];
        return static_cast<uint32_t>(pair >> (32 * (reg % 2)));
    };
    for (uint32_t i = 0; i < 4; ++i) {
        uint32_t row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float sum = acc[i];
        for (uint32_t k = 0; k < 8; ++k) {
            // A(row, k): lane (row % 8) · 4 + k % 4, register row / 8 + 2 (k / 4)
            float x = tf32(word(a01, a23, (row % 8) * 4 + k % 4, row / 8 + 2 * (k / 4)));
            // B(k, col): lane col · 4 + k % 4, register k / 4
            float y = tf32(word(b01, b01, col * 4 + k % 4, k / 4));
            sum = fmaf(x, y, sum);
        }
        acc[i] = sum;
    }
}

}  // namespace tessera_sim

template <bool TRANS>
inline void tessera_ldmatrix_x4(unsigned (&r)[4], const void* row) {
    tessera_sim::ldmatrix<4, TRANS>(r, row, TRANS ? "ldmatrix.x4.trans" : "ldmatrix.x4");
}
template <bool TRANS>
inline void tessera_ldmatrix_x2(unsigned (&r)[2], const void* row) {
    tessera_sim::ldmatrix<2, TRANS>(r, row, TRANS ? "ldmatrix.x2.trans" : "ldmatrix.x2");
}
template <bool TRANS>
inline void tessera_ldmatrix_x1(unsigned (&r)[1], const void* row) {
    tessera_sim::ldmatrix<1, TRANS>(r, row, TRANS ? "ldmatrix.x1.trans" : "ldmatrix.x1");
}
template <class T>
inline void tessera_mma_m16n8k16(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value,
                  "mma.m16n8k16 multiplies __half or __nv_bfloat16");
    tessera_sim::mma_m16n8k16<T>(acc, a, b, std::is_same<T, __half>::value ? "mma.m16n8k16.f16" : "mma.m16n8k16.bf16");
}
inline void tessera_mma_m16n8k8_tf32(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    tessera_sim::mma_m16n8k8_tf32(acc, a, b);
}
// cvt.rna.tf32.f32: round to the 10-bit mantissa, to nearest, ties away from zero (adding half
// of the dropped 13 bits' unit to the magnitude carries into the exponent where it must);
// infinities stay, NaNs stay NaNs.
inline unsigned tessera_tf32(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        return (bits & 0x007fffffu) != 0 ? (bits | 0x00400000u) & 0xffffe000u : bits;
    }
    return (bits + 0x00001000u) & 0xffffe000u;
}
template <int N>
inline void tessera_round_to_tf32(unsigned (&r)[N]) {
    for (int i = 0; i < N; ++i) r[i] = tessera_tf32(tessera_sim::bits_f32(r[i]));
}
// ── wgmma (sm_90a): warpgroup matrix multiply from shared-memory descriptors ─────────────
// A descriptor holds the operand's start as an offset into the block's shared memory (the
// hardware's shared address; the simulated section is 1024-byte aligned like the GPU's), its
// leading and stride byte offsets and swizzle mode. Each lane computes its own accumulators
// from the operands in shared memory when the instruction issues (after the warp's lanes have
// all arrived): the stores before it, fenced by the program's barrier, are what it reads.
namespace tessera_sim {

struct WgmmaOperand {
    uintptr_t start, leading, stride, span;
    bool mn_major;
    uint32_t element_bytes;
    // The byte offset (in the shared window) of element (mn, k): M or N index mn, k index k,
    // in the PTX ISA's canonical layouts (a core matrix is 8 rows of 16 bytes), then the
    // swizzle (address bits 4.. XOR bits 7..).
    uintptr_t offset(uint32_t mn, uint32_t k) const {
        uintptr_t at;
        if (mn_major) {
            uint32_t per_row = static_cast<uint32_t>(span / element_bytes);
            at = start + mn / per_row * leading + k / 8 * stride + k % 8 * span + mn % per_row * element_bytes;
        } else {
            at = start + mn / 8 * stride + mn % 8 * span + k * element_bytes;
        }
        return at ^ (((at >> 7) & (span / 16 - 1)) << 4);
    }
};

inline WgmmaOperand wgmma_operand(unsigned long long descriptor, bool mn_major, uint32_t element_bytes) {
    uint32_t mode = static_cast<uint32_t>(descriptor >> 62);
    uintptr_t span = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
    if (span == 0) stop_thread(kTrap, "wgmma: a descriptor without a swizzle mode (tessera emits 32-, 64- or 128-byte ones)");
    return WgmmaOperand{(descriptor & 0x3fffu) << 4, ((descriptor >> 16) & 0x3fffu) << 4,
                        ((descriptor >> 32) & 0x3fffu) << 4, span, mn_major, element_bytes};
}

// The value wgmma multiplies for the element stored at `at`: a 16-bit float, or (T = float,
// TF32) the f32 with its low 13 mantissa bits cleared, as the tensor cores read it.
template <class T>
inline float wgmma_element(const char* at) {
    if (std::is_same<T, float>::value) {
        uint32_t bits;
        memcpy(&bits, at, 4);
        return tf32(bits);
    }
    uint16_t bits;
    memcpy(&bits, at, 2);
    return element_to_float<T>(bits);
}

// T = __half or __nv_bfloat16: m64nNk16; T = float: TF32, m64nNk8 (K-major operands only).
// accumulate = false: d = A·B (scale-d = 0), d's values before never read.
template <class T, int TRANS_A, int TRANS_B, int TILES>
inline void wgmma(float (&d)[TILES][4], unsigned long long a_descriptor, unsigned long long b_descriptor, bool accumulate,
                  const char* op) {
    Machine& s = m();
    uintptr_t base = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    if (base % 1024 != 0) stop_thread(kTrap, "wgmma: the simulated shared memory is not 1024-byte aligned");
    uint64_t unused[kWarpSize];
    warp_gather(op, 0, 0, unused, 0);  // every lane of the warp at this wgmma
    constexpr uint32_t bytes = sizeof(T), steps = 32 / bytes;
    const WgmmaOperand a = wgmma_operand(a_descriptor, TRANS_A, bytes), b = wgmma_operand(b_descriptor, TRANS_B, bytes);
    const uintptr_t size = reinterpret_cast<uintptr_t>(__stop_tessera_shared) - base;
    auto element = [&](const WgmmaOperand& operand, uint32_t mn, uint32_t k) {
        uintptr_t at = operand.offset(mn, k);
        if (at + bytes > size) {
            char message[200];
            snprintf(message, sizeof message, "wgmma: element (%u, %u) of an operand lies at shared byte %lu, past the %lu bytes of shared memory",
                     mn, k, static_cast<unsigned long>(at), static_cast<unsigned long>(size));
            stop_thread(kTrap, message);
        }
        return wgmma_element<T>(reinterpret_cast<const char*>(base + at));
    };
    const uint32_t warp = s.current / kWarpSize % 4, g = lane() / 4, t = lane() % 4;
    for (uint32_t tile = 0; tile < TILES; ++tile) {
        for (uint32_t v = 0; v < 4; ++v) {
            uint32_t row = 16 * warp + g + 8 * (v / 2), col = 8 * tile + 2 * t + v % 2;
            float sum = accumulate ? d[tile][v] : 0.0f;
            for (uint32_t k = 0; k < steps; ++k) sum = fmaf(element(a, row, k), element(b, col, k), sum);
            d[tile][v] = sum;
        }
    }
    warp_gather(op, 1, 0, unused, 0);  // no lane stores before every lane has read
}

// wgmma with A from registers: warp w of the group holds rows 16w .. 16w + 15 of the 64 × 16 A
// tile in mma.sync's m16n8k16 A layout (a[0] = (g, 2t | 2t + 1), a[1] = (g + 8, ..), a[2] =
// (g, 2t + 8 | 2t + 9), a[3] = (g + 8, ..)), so a lane's rows g, g + 8 are in lanes 4g .. 4g + 3
// of its own warp; B from shared memory through its descriptor, as above.
template <class T, int TRANS_B, int TILES>
inline void wgmma_register_a(float (&d)[TILES][4], const unsigned (&a)[4], unsigned long long b_descriptor,
                             bool accumulate, const char* op) {
    uintptr_t base = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    if (base % 1024 != 0) stop_thread(kTrap, "wgmma: the simulated shared memory is not 1024-byte aligned");
    const uint32_t g = lane() / 4, t = lane() % 4;
    uint64_t a01[kWarpSize], a23[kWarpSize], unused[kWarpSize];
    warp_gather(op, 0, a[0] | uint64_t{a[1]} << 32, a01);
    warp_gather(op, 1, a[2] | uint64_t{a[3]} << 32, a23);
    const WgmmaOperand b = wgmma_operand(b_descriptor, TRANS_B, 2);
    const uintptr_t size = reinterpret_cast<uintptr_t>(__stop_tessera_shared) - base;
    auto b_element = [&](uint32_t n, uint32_t k) {
        uintptr_t at = b.offset(n, k);
        if (at + 2 > size) {
            char message[200];
            snprintf(message, sizeof message, "wgmma: element (%u, %u) of B lies at shared byte %lu, past the %lu bytes of shared memory",
                     n, k, static_cast<unsigned long>(at), static_cast<unsigned long>(size));
            stop_thread(kTrap, message);
        }
        uint16_t bits;
        memcpy(&bits, reinterpret_cast<const char*>(base + at), 2);
        return element_to_float<T>(bits);
    };
    for (uint32_t tile = 0; tile < TILES; ++tile) {
        for (uint32_t v = 0; v < 4; ++v) {
            uint32_t row = g + 8 * (v / 2), col = 8 * tile + 2 * t + v % 2;
            float sum = accumulate ? d[tile][v] : 0.0f;
            for (uint32_t k = 0; k < 16; ++k) {
                // A(row, k): lane (row % 8) · 4 + (k % 8) / 2, register row / 8 + 2 (k / 8)
                float x = element_to_float<T>(fragment_half(a01, a23, (row % 8) * 4 + (k % 8) / 2, row / 8 + 2 * (k / 8), k % 2));
                sum = fmaf(x, b_element(col, k), sum);
            }
            d[tile][v] = sum;
        }
    }
    warp_gather(op, 2, 0, unused, 0);  // no lane stores before every lane has read
}

// TF32 wgmma with A from registers: warp w of the group holds rows 16w .. 16w + 15 of the 64 × 8
// A tile in mma.sync's m16n8k8 TF32 layout (a[0] = (g, t), a[1] = (g + 8, t), a[2] = (g, t + 4),
// a[3] = (g + 8, t + 4)), f32 bits the tensor cores read as TF32 (low 13 mantissa bits ignored),
// so A(row, k) is in lane (row % 8) · 4 + k % 4 of its own warp, register row / 8 + 2 (k / 4);
// B (K-major, f32) from shared memory through its descriptor.
template <int TILES>
inline void wgmma_register_a_tf32(float (&d)[TILES][4], const unsigned (&a)[4], unsigned long long b_descriptor,
                                  bool accumulate, const char* op) {
    uintptr_t base = reinterpret_cast<uintptr_t>(__start_tessera_shared);
    if (base % 1024 != 0) stop_thread(kTrap, "wgmma: the simulated shared memory is not 1024-byte aligned");
    const uint32_t g = lane() / 4, t = lane() % 4;
    uint64_t a01[kWarpSize], a23[kWarpSize], unused[kWarpSize];
    warp_gather(op, 0, a[0] | uint64_t{a[1]} << 32, a01);
    warp_gather(op, 1, a[2] | uint64_t{a[3]} << 32, a23);
    const WgmmaOperand b = wgmma_operand(b_descriptor, false, 4);
    const uintptr_t size = reinterpret_cast<uintptr_t>(__stop_tessera_shared) - base;
    auto b_element = [&](uint32_t n, uint32_t k) {
        uintptr_t at = b.offset(n, k);
        if (at + 4 > size) {
            char message[200];
            snprintf(message, sizeof message, "wgmma: element (%u, %u) of B lies at shared byte %lu, past the %lu bytes of shared memory",
                     n, k, static_cast<unsigned long>(at), static_cast<unsigned long>(size));
            stop_thread(kTrap, message);
        }
        return wgmma_element<float>(reinterpret_cast<const char*>(base + at));
    };
    auto a_element = [&](uint32_t row, uint32_t k) {
        uint32_t register_index = row / 8 + 2 * (k / 4);
        uint64_t pair = (register_index < 2 ? a01 : a23)[(row % 8) * 4 + k % 4];
        return tf32(static_cast<uint32_t>(register_index % 2 == 0 ? pair : pair >> 32));
    };
    for (uint32_t tile = 0; tile < TILES; ++tile) {
        for (uint32_t v = 0; v < 4; ++v) {
            uint32_t row = g + 8 * (v / 2), col = 8 * tile + 2 * t + v % 2;
            float sum = accumulate ? d[tile][v] : 0.0f;
            for (uint32_t k = 0; k < 8; ++k) sum = fmaf(a_element(row, k), b_element(col, k), sum);
            d[tile][v] = sum;
        }
    }
    warp_gather(op, 2, 0, unused, 0);  // no lane stores before every lane has read
}

}  // namespace tessera_sim

inline unsigned long long tessera_wgmma_descriptor(const void* start, unsigned leading_bytes, unsigned stride_bytes,
                                                   unsigned swizzle_mode) {
    uintptr_t address = reinterpret_cast<uintptr_t>(start) - reinterpret_cast<uintptr_t>(__start_tessera_shared);
    if (!tessera_sim::in_shared_memory(reinterpret_cast<uintptr_t>(start), 16))
        tessera_sim::stop_thread(tessera_sim::kTrap, "wgmma: a descriptor's start is not in shared memory");
    return static_cast<unsigned long long>((address & 0x3ffffu) >> 4) |
           static_cast<unsigned long long>((leading_bytes & 0x3ffffu) >> 4) << 16 |
           static_cast<unsigned long long>((stride_bytes & 0x3ffffu) >> 4) << 32 |
           static_cast<unsigned long long>(swizzle_mode) << 62;
}
// wgmma is asynchronous: the hardware may read its operands any time until the thread's
// wgmma.wait_group lets it go. Under the orders that land cp.async at issue it runs at that
// wait, reading shared memory as late as the program allows while refills land as early as
// they can, so a stage refilled before its multiply is done changes the numbers; under the
// others (copies landing at their wait) it runs at issue, so a multiply that reads a stage
// before its copies are waited for does.
template <class T, int TRANS_A, int TRANS_B, int TILES>
inline void tessera_wgmma(float (&d)[TILES][4], unsigned long long a_descriptor, unsigned long long b_descriptor,
                          int accumulate = 1) {
    static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value ||
                      std::is_same<T, float>::value,
                  "wgmma multiplies __half, __nv_bfloat16 or float (TF32)");
    static_assert(!std::is_same<T, float>::value || (TRANS_A == 0 && TRANS_B == 0),
                  "TF32 wgmma reads K-major operands only");
    auto run = [&d, a_descriptor, b_descriptor, accumulate]() {
        tessera_sim::wgmma<T, TRANS_A, TRANS_B>(d, a_descriptor, b_descriptor, accumulate != 0,
                                                std::is_same<T, __half>::value    ? "wgmma.f16"
                                                : std::is_same<T, float>::value ? "wgmma.tf32"
                                                                                 : "wgmma.bf16");
    };
    tessera_sim::Machine& s = tessera_sim::m();
    if (s.launch->async_copies_at_issue) {
        s.wgmma_pending[s.current].push_back({run, s.wgmma_groups[s.current]});
    } else {
        run();
    }
}
// A's registers are read at issue (the program may not change them before the wait anyway).
template <class T, int TRANS_B, int TILES>
inline void tessera_wgmma_register_a(float (&d)[TILES][4], const unsigned (&a)[4], unsigned long long b_descriptor,
                                     int accumulate = 1) {
    static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value ||
                      std::is_same<T, float>::value,
                  "wgmma multiplies __half, __nv_bfloat16 or float (TF32)");
    static_assert(!std::is_same<T, float>::value || TRANS_B == 0, "TF32 wgmma reads B K-major only");
    const unsigned registers[4] = {a[0], a[1], a[2], a[3]};
    auto run = [&d, registers, b_descriptor, accumulate]() {
        if constexpr (std::is_same<T, float>::value) {
            tessera_sim::wgmma_register_a_tf32(d, registers, b_descriptor, accumulate != 0, "wgmma.tf32 (A in registers)");
        } else {
            tessera_sim::wgmma_register_a<T, TRANS_B>(d, registers, b_descriptor, accumulate != 0,
                                                      std::is_same<T, __half>::value ? "wgmma.f16 (A in registers)" : "wgmma.bf16 (A in registers)");
        }
    };
    tessera_sim::Machine& s = tessera_sim::m();
    if (s.launch->async_copies_at_issue) {
        s.wgmma_pending[s.current].push_back({run, s.wgmma_groups[s.current]});
    } else {
        run();
    }
}
// The first k-step of an `.overwrite()` product: scale-d = 0, d's values before never read.
template <class T, int TRANS_A, int TRANS_B, int TILES>
inline void tessera_wgmma_overwrite(float (&d)[TILES][4], unsigned long long a_descriptor, unsigned long long b_descriptor) {
    tessera_wgmma<T, TRANS_A, TRANS_B>(d, a_descriptor, b_descriptor, 0);
}
template <class T, int TRANS_B, int TILES>
inline void tessera_wgmma_register_a_overwrite(float (&d)[TILES][4], const unsigned (&a)[4], unsigned long long b_descriptor) {
    tessera_wgmma_register_a<T, TRANS_B>(d, a, b_descriptor, 0);
}
// Orders the accumulators' registers in the hardware; nothing to do here.
inline void tessera_wgmma_fence() {}
inline void tessera_wgmma_commit() { tessera_sim::m().wgmma_groups[tessera_sim::m().current]++; }
// Runs the calling thread's wgmma of all but its newest N committed groups, oldest first.
template <int N>
inline void tessera_wgmma_wait() {
    tessera_sim::Machine& s = tessera_sim::m();
    tessera_sim::run_all_but_newest(s.wgmma_pending[s.current], s.wgmma_groups[s.current], N);
}
template <int TILES>
inline void tessera_wgmma_fence_operands(float (&)[TILES][4]) {}
template <int STEPS>
inline void tessera_wgmma_fence_operands(unsigned (&)[STEPS][4]) {}
inline void tessera_fence_proxy_async() {}
inline int __syncthreads_count(int predicate) { return tessera_sim::block_barrier(predicate); }
inline int __syncthreads_and(int predicate) {
    return tessera_sim::block_barrier(predicate) == static_cast<int>(tessera_sim::m().threads);
}
inline int __syncthreads_or(int predicate) { return tessera_sim::block_barrier(predicate) != 0; }
inline void __syncwarp(unsigned int mask = 0xffffffffu) { tessera_sim::warp_exchange(mask, 0); }
// Fibers interleave only at barriers, on one OS thread: every fence is already satisfied.
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned int) {}
// A programmatic dependent launch's wait and trigger (griddepcontrol): the simulator runs one
// launch at a time, so the grid before this one has always ended and its writes are in memory.
inline void tessera_wait_for_prior_grid() {}
inline void tessera_launch_dependents() {}
inline long long clock64() { return static_cast<long long>(++tessera_sim::m().clock); }

// ── Warp shuffles and votes ──────────────────────────────────────────────────────────────
template <class T>
inline T __shfl_sync(unsigned int mask, T var, int src_lane, int width = warpSize) {
    return tessera_sim::shuffle(mask, var, src_lane, width, 0);
}
template <class T>
inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
    return tessera_sim::shuffle(mask, var, static_cast<int>(delta), width, 1);
}
template <class T>
inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
    return tessera_sim::shuffle(mask, var, static_cast<int>(delta), width, 2);
}
template <class T>
inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask, int width = warpSize) {
    return tessera_sim::shuffle(mask, var, lane_mask, width, 3);
}
inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return tessera_sim::ballot(mask, predicate);
}
inline int __all_sync(unsigned int mask, int predicate) {
    return tessera_sim::ballot(mask, predicate) == ((mask | (1u << tessera_sim::lane())) &
                                                    tessera_sim::warp_lanes(tessera_sim::m().current / 32));
}
inline int __any_sync(unsigned int mask, int predicate) {
    return tessera_sim::ballot(mask, predicate) != 0;
}
// Approximate: fibers run one at a time, so "the lanes executing this together" is not known;
// this is every lane of the warp that has not finished.
inline unsigned int __activemask() {
    tessera_sim::Machine& s = tessera_sim::m();
    uint32_t warp = s.current / 32, active = 0;
    for (uint32_t l = 0; l < 32; ++l)
        if ((tessera_sim::warp_lanes(warp) & (1u << l)) &&
            s.fibers[warp * 32 + l].state != tessera_sim::State::Done)
            active |= 1u << l;
    return active;
}
// ── Cluster built-ins (what codegen's cluster_helpers.cu defines with PTX on the GPU) ─────
inline int tessera_cluster_rank() { return static_cast<int>(tessera_sim::m().cluster_rank); }
inline int tessera_cluster_blocks() { return static_cast<int>(tessera_sim::m().cluster_blocks); }
inline void tessera_cluster_sync() { tessera_sim::cluster_barrier(); }

// The cluster reductions' exchange (codegen's cluster_exchange_helpers.cu): st.async pushes into
// another block's shared memory — the copy it left when its turn ended — counted on its mbarrier
// there, which a block that waits for it stalls on until the pushing blocks have had their turns.
// The cluster barrier's two halves: the arrival as the kernel starts changes nothing here, the
// wait is the whole barrier (every block's mbarriers are initialised by then on the GPU too).
inline void tessera_cluster_arrive() {}
inline void tessera_cluster_wait() { tessera_cluster_sync(); }
template <class T>
inline void tessera_cluster_push(T* slot, T value, tessera_mbarrier* bar, int rank) {
    uint8_t* there = tessera_sim::in_rank(slot, static_cast<uint32_t>(rank), sizeof(T), "a cluster push");
    memcpy(there, &value, sizeof(T));
    tessera_mbarrier* counted = reinterpret_cast<tessera_mbarrier*>(
        tessera_sim::in_rank(bar, static_cast<uint32_t>(rank), sizeof(tessera_mbarrier), "a cluster push's mbarrier"));
    counted->transaction_bytes -= static_cast<int64_t>(sizeof(T));
    tessera_mbarrier_complete_if_done(counted);
}

template <class T>
inline unsigned int __match_any_sync(unsigned int mask, T value) {
    tessera_sim::warp_exchange(mask, tessera_sim::to_bits(value));
    uint64_t mine = tessera_sim::to_bits(value);
    unsigned int result = 0;
    for (uint32_t l = 0; l < 32; ++l)
        if (((mask | (1u << tessera_sim::lane())) & (1u << l)) &&
            (tessera_sim::warp_lanes(tessera_sim::m().current / 32) & (1u << l)) &&
            tessera_sim::warp_read(mask, l) == mine)
            result |= 1u << l;
    return result;
}
#define TESSERA_WARP_REDUCE(name, T, combine)                                                \
    inline T name(unsigned int mask, T value) {                                              \
        tessera_sim::warp_exchange(mask, tessera_sim::to_bits(value));                      \
        T acc = value;                                                                       \
        for (uint32_t l = 0; l < 32; ++l) {                                                  \
            if (l == tessera_sim::lane() || !(mask & (1u << l)) ||                           \
                !(tessera_sim::warp_lanes(tessera_sim::m().current / 32) & (1u << l)))       \
                continue;                                                                    \
            T other = tessera_sim::from_bits<T>(tessera_sim::warp_read(mask, l));           \
            acc = combine;                                                                   \
        }                                                                                    \
        return acc;                                                                          \
    }
TESSERA_WARP_REDUCE(__reduce_add_sync, unsigned int, acc + other)
TESSERA_WARP_REDUCE(__reduce_add_sync, int, acc + other)
TESSERA_WARP_REDUCE(__reduce_min_sync, unsigned int, other < acc ? other : acc)
TESSERA_WARP_REDUCE(__reduce_min_sync, int, other < acc ? other : acc)
TESSERA_WARP_REDUCE(__reduce_max_sync, unsigned int, other > acc ? other : acc)
TESSERA_WARP_REDUCE(__reduce_max_sync, int, other > acc ? other : acc)
TESSERA_WARP_REDUCE(__reduce_and_sync, unsigned int, acc & other)
TESSERA_WARP_REDUCE(__reduce_or_sync, unsigned int, acc | other)
TESSERA_WARP_REDUCE(__reduce_xor_sync, unsigned int, acc ^ other)
#undef TESSERA_WARP_REDUCE
inline unsigned int __lanemask_lt() { return (1u << tessera_sim::lane()) - 1u; }
inline unsigned int __lanemask_le() { return ((1u << tessera_sim::lane()) << 1) - 1u; }
inline unsigned int __lanemask_eq() { return 1u << tessera_sim::lane(); }
inline unsigned int __lanemask_gt() { return ~__lanemask_le(); }
inline unsigned int __lanemask_ge() { return ~__lanemask_lt(); }

// ── Atomics (fibers never interleave inside one, so plain read-modify-write is atomic) ───
#define TESSERA_ATOMIC(name, T, update)                                                      \
    inline T name(T* address, T val) {                                                       \
        T old = *address;                                                                    \
        *address = update;                                                                   \
        return old;                                                                          \
    }                                                                                        \
    inline T name##_block(T* address, T val) { return name(address, val); }                  \
    inline T name##_system(T* address, T val) { return name(address, val); }
TESSERA_ATOMIC(atomicAdd, int, old + val)
TESSERA_ATOMIC(atomicAdd, unsigned int, old + val)
TESSERA_ATOMIC(atomicAdd, unsigned long long, old + val)
TESSERA_ATOMIC(atomicAdd, float, old + val)
TESSERA_ATOMIC(atomicAdd, double, old + val)
TESSERA_ATOMIC(atomicAdd, __half, old + val)
TESSERA_ATOMIC(atomicAdd, __half2, old + val)
TESSERA_ATOMIC(atomicAdd, __nv_bfloat16, old + val)
TESSERA_ATOMIC(atomicAdd, __nv_bfloat162, old + val)
TESSERA_ATOMIC(atomicSub, int, old - val)
TESSERA_ATOMIC(atomicSub, unsigned int, old - val)
TESSERA_ATOMIC(atomicExch, int, val)
TESSERA_ATOMIC(atomicExch, unsigned int, val)
TESSERA_ATOMIC(atomicExch, unsigned long long, val)
TESSERA_ATOMIC(atomicExch, float, val)
TESSERA_ATOMIC(atomicMin, int, val < old ? val : old)
TESSERA_ATOMIC(atomicMin, unsigned int, val < old ? val : old)
TESSERA_ATOMIC(atomicMin, long long, val < old ? val : old)
TESSERA_ATOMIC(atomicMin, unsigned long long, val < old ? val : old)
TESSERA_ATOMIC(atomicMax, int, val > old ? val : old)
TESSERA_ATOMIC(atomicMax, unsigned int, val > old ? val : old)
TESSERA_ATOMIC(atomicMax, long long, val > old ? val : old)
TESSERA_ATOMIC(atomicMax, unsigned long long, val > old ? val : old)
TESSERA_ATOMIC(atomicAnd, int, old & val)
TESSERA_ATOMIC(atomicAnd, unsigned int, old & val)
TESSERA_ATOMIC(atomicAnd, unsigned long long, old & val)
TESSERA_ATOMIC(atomicOr, int, old | val)
TESSERA_ATOMIC(atomicOr, unsigned int, old | val)
TESSERA_ATOMIC(atomicOr, unsigned long long, old | val)
TESSERA_ATOMIC(atomicXor, int, old ^ val)
TESSERA_ATOMIC(atomicXor, unsigned int, old ^ val)
TESSERA_ATOMIC(atomicXor, unsigned long long, old ^ val)
TESSERA_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1u)
TESSERA_ATOMIC(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)
#undef TESSERA_ATOMIC
#define TESSERA_ATOMIC_CAS(T)                                                                \
    inline T atomicCAS(T* address, T compare, T val) {                                       \
        T old = *address;                                                                    \
        if (old == compare) *address = val;                                                  \
        return old;                                                                          \
    }                                                                                        \
    inline T atomicCAS_block(T* address, T compare, T val) { return atomicCAS(address, compare, val); } \
    inline T atomicCAS_system(T* address, T compare, T val) { return atomicCAS(address, compare, val); }
TESSERA_ATOMIC_CAS(int)
TESSERA_ATOMIC_CAS(unsigned int)
TESSERA_ATOMIC_CAS(unsigned long long)
TESSERA_ATOMIC_CAS(unsigned short)
#undef TESSERA_ATOMIC_CAS

// ── Loads and stores with cache hints ────────────────────────────────────────────────────
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ── Integer and float built-ins ──────────────────────────────────────────────────────────
#define TESSERA_MINMAX(T)                                                                    \
    inline T min(T a, T b) { return b < a ? b : a; }                                         \
    inline T max(T a, T b) { return a < b ? b : a; }
TESSERA_MINMAX(int)
TESSERA_MINMAX(unsigned int)
TESSERA_MINMAX(long)
TESSERA_MINMAX(unsigned long)
TESSERA_MINMAX(long long)
TESSERA_MINMAX(unsigned long long)
#undef TESSERA_MINMAX
inline unsigned int min(int a, unsigned int b) { return min(static_cast<unsigned int>(a), b); }
inline unsigned int min(unsigned int a, int b) { return min(a, static_cast<unsigned int>(b)); }
inline unsigned int max(int a, unsigned int b) { return max(static_cast<unsigned int>(a), b); }
inline unsigned int max(unsigned int a, int b) { return max(a, static_cast<unsigned int>(b)); }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) {
    return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    uint64_t both = (uint64_t{y} << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned int>((both >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t both = (uint64_t{hi} << 32) | lo;
    return static_cast<unsigned int>((both << (shift & 31)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t both = (uint64_t{hi} << 32) | lo;
    return static_cast<unsigned int>(both >> (shift & 31));
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffff) * (b & 0xffffff); }
inline int __mulhi(int a, int b) { return static_cast<int>((int64_t{a} * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return static_cast<unsigned int>((uint64_t{a} * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
    return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}

template <class To, class From>
inline To tessera_bit_cast(From from) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To to;
    memcpy(&to, &from, sizeof to);
    return to;
}
inline int __float_as_int(float x) { return tessera_bit_cast<int>(x); }
// exp2_ftz(x): ex2.approx.ftz — subnormal inputs read as 0, results below 2^-126 flushed to 0
inline float tessera_exp2_ftz(float x) {
    const float y = exp2f(fabsf(x) < 1.17549435e-38f ? 0.0f : x);
    return y < 1.17549435e-38f ? 0.0f : y;
}
inline unsigned int __float_as_uint(float x) { return tessera_bit_cast<unsigned int>(x); }
inline float __int_as_float(int x) { return tessera_bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return tessera_bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return tessera_bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return tessera_bit_cast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(__double_as_longlong(x)); }
inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double(static_cast<long long>((uint64_t{static_cast<uint32_t>(hi)} << 32) | static_cast<uint32_t>(lo)));
}

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x != x ? 0.0f : x)); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
inline unsigned int __float2uint_rn(float x) { return static_cast<unsigned int>(nearbyintf(x)); }
inline unsigned int __float2uint_rz(float x) { return static_cast<unsigned int>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned int x) { return static_cast<float>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline int __double2int_rn(double x) { return static_cast<int>(nearbyint(x)); }
inline int __double2int_rz(double x) { return static_cast<int>(x); }

// ── Traps and assertions: reported as errors, never an abort of the host process ────────
[[noreturn]] inline void __trap() { tessera_sim::stop_thread(tessera_sim::kTrap, "the kernel called __trap()"); }
[[noreturn]] inline void __brkpt() { tessera_sim::stop_thread(tessera_sim::kTrap, "the kernel called __brkpt()"); }
// Defined here (hidden in this library), so a device-side assert() is a report, not abort().
extern "C" void __assert_fail(const char* assertion, const char* file, unsigned int line,
                              const char* function) noexcept {
    char message[400];
    snprintf(message, sizeof message, "assertion `%s` failed at %s:%u in %s", assertion, file,
             line, function);
    tessera_sim::stop_thread(tessera_sim::kTrap, message);
}

// ── x.vector_at(..): a vector access at an element the kernel computed aligned ─────────────
// The GPU faults on a misaligned vector access; the simulation stops the thread with the
// address (x86-64 would load it unaligned and hide the bug, or fault without saying why).
namespace tessera_sim {
[[noreturn]] inline void misaligned_vector(const void* p, size_t bytes) {
    char message[200];
    snprintf(message, sizeof message,
             "a %zu-byte vector access (`vector_at`) at address %p, which is not %zu-byte aligned",
             bytes, p, bytes);
    stop_thread(kTrap, message);
}
}  // namespace tessera_sim

template <typename V, typename T>
inline V& tessera_vector_at(T* p) {
    if (reinterpret_cast<uintptr_t>(p) % sizeof(V) != 0) tessera_sim::misaligned_vector(p, sizeof(V));
    return *reinterpret_cast<V*>(p);
}

template <typename V, typename T>
inline const V& tessera_vector_at(const T* p) {
    if (reinterpret_cast<uintptr_t>(p) % sizeof(V) != 0) tessera_sim::misaligned_vector(p, sizeof(V));
    return *reinterpret_cast<const V*>(p);
}

// ── What the runtime calls in every simulation library ───────────────────────────────────
extern "C" __attribute__((visibility("default"))) unsigned int tessera_sim_abi() {
    return tessera_sim::kAbiVersion;
}

// Called by the runtime's SIGSEGV/SIGBUS/SIGFPE/SIGILL handler while this library runs a
// launch on the faulting thread: records where, and jumps back to the entry point.
extern "C" __attribute__((visibility("default"))) void tessera_sim_fault(int signal,
                                                                         siginfo_t* info,
                                                                         void*) {
    tessera_sim::Machine& s = tessera_sim::m();
    uintptr_t address = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
    bool overflow = (signal == SIGSEGV || signal == SIGBUS) && tessera_sim::in_guard_page(address);
    s.report->signal = signal;
    s.report->code = info ? info->si_code : 0;
    s.report->address = address;
    tessera_sim::escape_fault(overflow ? tessera_sim::kStackOverflow : tessera_sim::kFault,
                        overflow ? "a thread ran off its stack" : "the kernel faulted");
}

// Appended after the kernel's source by the runtime, naming the kernel to run.
#define TESSERA_SIM_ENTRY(kernel)                                                            \
    extern "C" __attribute__((visibility("default"))) int tessera_sim_entry(                 \
        const tessera_sim::Launch* launch, tessera_sim::Report* report) {                    \
        return tessera_sim::run_kernel(&kernel, launch, report);                             \
    }                                                                                        \
    extern "C" __attribute__((visibility("default"))) const char* tessera_sim_signature() {  \
        return tessera_sim::signature(&kernel);                                              \
    }

#endif  // TESSERA_SIM_H
