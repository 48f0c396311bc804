{%- if operands_only -%}
// {{ dsl }}: this k-tile's A registers, {{ operands_note }}; the
// product is issued by the next k-tile, behind its first mma (after the loop for the last tile)
#pragma unroll
for (int kk = 0; kk < {{ k_name }}; kk += {{ k_step }}) {
{%- for load in a_loads %}
    {{ load }}
{%- endfor %}
}
{%- else if let Some(registers) = stepwise -%}
// {{ dsl }}: {{ instruction }}, {{ k_name }} / {{ k_step }} k-steps; each
// warpgroup multiplies its 64 × {{ n }} tile, the tensor cores reading B from shared memory
// through a descriptor and A from registers: {{ operands_note }}.
{%- if group_steps == 1 %}
// A group a k-step: a step's registers are reloaded once the previous k-tile's group of that
// step is done (at most the {{ k_name }} / {{ k_step }} − 1 groups after it still running), so the tensor cores
// keep the previous k-tile's last steps while the lanes load this one's first
{%- else %}
// A group every {{ group_steps }} k-steps: a group's registers are reloaded once the previous k-tile's
// group of those steps is done (at most the {{ k_name }} / {{ group_k }} − 1 groups after it still running), so the
// tensor cores keep the previous k-tile's last steps while the lanes load this one's first
{%- endif %}
{
    const int lane = tid % 32;
    #pragma unroll
    for (int group_k = 0; group_k < {{ k_name }}; group_k += {{ group_k }}) {
        tessera_wgmma_wait<{{ k_name }} / {{ group_k }} - 1>();
        tessera_wgmma_fence_operands({{ registers }});  // the group's registers, read by wgmma until now
        #pragma unroll
        for (int kk = group_k; kk < group_k + {{ group_k }}; kk += {{ k_step }}) {
{%- for load in a_loads %}
            {{ load }}
{%- endfor %}
        }
        tessera_wgmma_fence_operands({{ acc }}[0]);
        tessera_wgmma_fence();  // the accumulators' and A's registers are ready for wgmma
        #pragma unroll
        for (int kk = group_k; kk < group_k + {{ group_k }}; kk += {{ k_step }}) {
            const unsigned long long b_descriptor = tessera_wgmma_descriptor(&{{ b.start }}, {{ b.leading }}, {{ b.stride }}, {{ b.mode }});
{%- if overwrite %}
            if (kk == 0) {
                tessera_wgmma_register_a_overwrite<{{ input }}, {{ b.transposed }}>({{ acc }}[0], {{ registers }}[kk / {{ k_step }}], b_descriptor);
            } else {
                tessera_wgmma_register_a<{{ input }}, {{ b.transposed }}>({{ acc }}[0], {{ registers }}[kk / {{ k_step }}], b_descriptor);
            }
{%- else %}
            tessera_wgmma_register_a<{{ input }}, {{ b.transposed }}>({{ acc }}[0], {{ registers }}[kk / {{ k_step }}], b_descriptor);
{%- endif %}
        }
        tessera_wgmma_commit();
    }
{%- if in_flight == 0 %}
    // every k-step done before the pipeline refills this stage or anything reads {{ acc }}
    tessera_wgmma_wait<0>();
{%- else %}
    // this k-tile's groups run on; the previous k-tile's are done, so its stage can be refilled
{%- endif %}
    tessera_wgmma_fence_operands({{ acc }}[0]);
}
{%- else -%}
// {{ dsl }}: {{ instruction }}, {{ k_name }} / {{ k_step }} k-steps; each
{%- match a %}
{%- when Some with (_a) %}
{%- if m_tiles > 1 %}
// warpgroup multiplies its {{ m_tiles * 64 }} × {{ n }} tile as {{ m_tiles }} m64 tiles, one instruction each a k-step, the
// tensor cores reading both operands from shared memory through descriptors (A's at each
// tile's rows, B's shared by them): {{ operands_note }}
{%- else %}
// warpgroup multiplies its 64 × {{ n }} tile, the tensor cores reading both operands from shared
// memory through descriptors: {{ operands_note }}
{%- endif %}
{%- when None %}
// warpgroup multiplies its 64 × {{ n }} tile, the tensor cores reading B from shared memory
// through a descriptor and A from registers: {{ operands_note }}
{%- endmatch %}
{%- if issue_only %}
// (issued here for the previous k-tile, from its stage and the A registers it packed)
{%- endif %}
{%- if overwrite %}
// The first k-step overwrites `{{ acc }}` (scale-d = 0): its values before are never read.
{%- endif %}
{
{%- match a %}
{%- when Some with (a) %}
{%- if overwrite %}
    tessera_wgmma_fence();  // (`{{ acc }}`'s values before are never read, so they need no fence)
{%- else %}
{%- for mi in 0..m_tiles %}
    tessera_wgmma_fence_operands({{ acc }}[{{ mi }}]);
{%- endfor %}
    tessera_wgmma_fence();  // the accumulators' registers are ready for wgmma to update
{%- endif %}
    #pragma unroll
    for (int kk = 0; kk < {{ k_name }}; kk += {{ k_step }}) {
{%- if m_tiles > 1 %}
        const unsigned long long b_descriptor = tessera_wgmma_descriptor(&{{ b.start }}, {{ b.leading }}, {{ b.stride }}, {{ b.mode }});
        #pragma unroll
        for (int mi = 0; mi < {{ m_tiles }}; ++mi) {
            const unsigned long long a_descriptor = tessera_wgmma_descriptor(&{{ a.start }}, {{ a.leading }}, {{ a.stride }}, {{ a.mode }});
{%- if overwrite %}
            if (kk == 0) {
                tessera_wgmma_overwrite<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[mi], a_descriptor, b_descriptor);
            } else {
                tessera_wgmma<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[mi], a_descriptor, b_descriptor);
            }
{%- else %}
            tessera_wgmma<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[mi], a_descriptor, b_descriptor);
{%- endif %}
        }
    }
{%- else %}
        const unsigned long long a_descriptor = tessera_wgmma_descriptor(&{{ a.start }}, {{ a.leading }}, {{ a.stride }}, {{ a.mode }});
        const unsigned long long b_descriptor = tessera_wgmma_descriptor(&{{ b.start }}, {{ b.leading }}, {{ b.stride }}, {{ b.mode }});
{%- if overwrite %}
        if (kk == 0) {
            tessera_wgmma_overwrite<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[0], a_descriptor, b_descriptor);
        } else {
            tessera_wgmma<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[0], a_descriptor, b_descriptor);
        }
{%- else %}
        tessera_wgmma<{{ input }}, {{ a.transposed }}, {{ b.transposed }}>({{ acc }}[0], a_descriptor, b_descriptor);
{%- endif %}
    }
{%- endif %}
{%- when None %}
{%- if !issue_only %}
    // every k-step's A registers packed before the fence: wgmma reads them asynchronously
    unsigned a_frag[{{ k_name }} / {{ k_step }}][4];
    #pragma unroll
    for (int kk = 0; kk < {{ k_name }}; kk += {{ k_step }}) {
{%- for load in a_loads %}
        {{ load }}
{%- endfor %}
    }
{%- endif %}
{%- if overwrite %}
    tessera_wgmma_fence();  // A's registers are ready for wgmma (`{{ acc }}`'s values before are not read)
{%- else %}
    tessera_wgmma_fence_operands({{ acc }}[0]);
    tessera_wgmma_fence();  // the accumulators' and A's registers are ready for wgmma
{%- endif %}
    #pragma unroll
    for (int kk = 0; kk < {{ k_name }}; kk += {{ k_step }}) {
        const unsigned long long b_descriptor = tessera_wgmma_descriptor(&{{ b.start }}, {{ b.leading }}, {{ b.stride }}, {{ b.mode }});
{%- if overwrite %}
        if (kk == 0) {
            tessera_wgmma_register_a_overwrite<{{ input }}, {{ b.transposed }}>({{ acc }}[0], a_frag[kk / {{ k_step }}], b_descriptor);
        } else {
            tessera_wgmma_register_a<{{ input }}, {{ b.transposed }}>({{ acc }}[0], a_frag[kk / {{ k_step }}], b_descriptor);
        }
{%- else %}
        tessera_wgmma_register_a<{{ input }}, {{ b.transposed }}>({{ acc }}[0], a_frag[kk / {{ k_step }}], b_descriptor);
{%- endif %}
    }
{%- endmatch %}
    tessera_wgmma_commit();
{%- if issue_only %}
    // it runs on: waited for before thread code next touches {{ acc }}
{%- else %}
{%- match behind %}
{%- when Some with (behind) %}
    if ({{ behind_condition }}) {
{{ behind }}
        tessera_wgmma_wait<1>();  // this product is done; the deferred one runs on
    } else {
        tessera_wgmma_wait<0>();  // every k-step done before anything reads {{ acc }}
    }
{%- when None %}
{%- if in_flight == 0 %}
    // every k-step done before the pipeline refills this stage or anything reads {{ acc }}
    tessera_wgmma_wait<0>();
{%- else %}
    // this tile's group runs on; the previous tile's is done, so its stage can be refilled
    tessera_wgmma_wait<{{ in_flight }}>();
{%- endif %}
{%- endmatch %}
{%- for mi in 0..m_tiles %}
    tessera_wgmma_fence_operands({{ acc }}[{{ mi }}]);
{%- endfor %}
{%- endif %}
}
{%- endif %}
