{%- if register_a -%}
{%- if tf32 -%}
// wgmma, A from registers: a warpgroup multiplies a 64 × 8 tile of A held in registers (warp w
// its rows 16w .. 16w + 15 in mma.sync's m16n8k8 TF32 A layout, four f32 values a lane whose low
// 13 mantissa bits the tensor cores ignore) by an 8 × {{ n }} tile of B read by the tensor cores
// from shared memory through a descriptor (K-major: TF32 has no TRANS operand), into 64 × {{ n }}
// f32 accumulators in the same layout as the descriptor form.
{%- else -%}
// wgmma, A from registers: a warpgroup multiplies a 64 × 16 tile of A held in registers (warp w
// its rows 16w .. 16w + 15 in mma.sync's m16n8k16 A layout, four 32-bit registers of 16-bit
// pairs a lane) by a 16 × {{ n }} tile of B read by the tensor cores from shared memory through a
// descriptor, into 64 × {{ n }} f32 accumulators in the same layout as the descriptor form.
// TRANS_B: B is stored N-major.
{%- endif %}
{%- if overwrite %}
// The first k-step of an `.overwrite()` product: d = A·B (scale-d = 0), d only written ("=f"),
// so its values before need not stay live.
{%- endif %}
#ifndef TESSERA_SIM_H
template <class T, int TRANS_B>
__device__ __forceinline__ void tessera_wgmma_register_a{{ suffix }}(float (&d)[{{ tiles }}][4], const unsigned (&a)[4], unsigned long long b_descriptor)
{
{%- if tf32 %}
    static_assert(TRANS_B == 0, "TF32 wgmma reads B K-major only");
{%- endif %}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %{{ accumulate_operand }}, 0;\n"
        "{{ instruction }}\n"
        "{{ registers }},\n"
{%- if tf32 %}
        "{{ a_operand }}, %{{ b_operand }}, accumulate, 1, 1;\n"
        "}\n"
        : {{ outputs }}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"({{ scale_d }}));
{%- else %}
        "{{ a_operand }}, %{{ b_operand }}, accumulate, 1, 1, %{{ trans_b_operand }};\n"
        "}\n"
        : {{ outputs }}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"({{ scale_d }}), "n"(TRANS_B));
{%- endif %}
#else
    __trap();  // wgmma is sm_90a's: the launch refuses other devices before getting here
#endif
}
#endif  // TESSERA_SIM_H
{%- else -%}
// wgmma: a warpgroup (4 warps) multiplies a 64 × {{ k }} tile of A by a {{ k }} × {{ n }} tile of B, both read
// by the tensor cores from shared memory through 64-bit matrix descriptors, into 64 × {{ n }} f32
// accumulators: warp w holds rows 16w .. 16w + 15 in mma.sync's m16n8 layout ({{ tiles }} tiles of 16 × 8).
{%- if tf32 %}
// TF32: the operands are f32 whose low 13 mantissa bits the tensor cores ignore, both stored
// K-major (the PTX ISA transposes only 16-bit operands), so the instruction has no TRANS operands.
{%- else %}
// TRANS_A / TRANS_B: the operand is stored MN-major (M or N along the panel rows).
{%- endif %}
{%- if overwrite %}
// The first k-step of an `.overwrite()` product: d = A·B (scale-d = 0), d only written ("=f"),
// so its values before need not stay live.
{%- endif %}
#ifndef TESSERA_SIM_H
template <class T, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void tessera_wgmma{{ suffix }}(float (&d)[{{ tiles }}][4], unsigned long long a_descriptor, unsigned long long b_descriptor)
{
{%- if tf32 %}
    static_assert(TRANS_A == 0 && TRANS_B == 0, "TF32 wgmma reads K-major operands only");
{%- endif %}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %{{ accumulate_operand }}, 0;\n"
        "{{ instruction }}\n"
        "{{ registers }},\n"
{%- if tf32 %}
        "{{ a_operand }}, %{{ b_operand }}, accumulate, 1, 1;\n"
        "}\n"
        : {{ outputs }}
        : "l"(a_descriptor), "l"(b_descriptor), "r"({{ scale_d }}));
{%- else %}
        "{{ a_operand }}, %{{ b_operand }}, accumulate, 1, 1, %{{ trans_a_operand }}, %{{ trans_b_operand }};\n"
        "}\n"
        : {{ outputs }}
        : "l"(a_descriptor), "l"(b_descriptor), "r"({{ scale_d }}), "n"(TRANS_A), "n"(TRANS_B));
{%- endif %}
#else
    __trap();  // wgmma is sm_90a's: the launch refuses other devices before getting here
#endif
}
#endif  // TESSERA_SIM_H
{%- endif %}
