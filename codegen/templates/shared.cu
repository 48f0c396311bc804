// {{ dsl }}{% if let Some(note) = note %}: {{ note }}{% endif %}
{% if let Some(offset) = offset -%}
{{ element }} (&{{ name }}){{ dims }} = *reinterpret_cast<{{ element }} (*){{ dims }}>(tessera_smem + {{ offset }});
{%- else -%}
__shared__ __align__({{ align }}) {{ element }} {{ name }}{{ dims }};
{%- endif %}
