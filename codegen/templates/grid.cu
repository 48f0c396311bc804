// {{ dsl }}
{%- for (var, axis) in bindings %}
const int {{ var }} = blockIdx.{{ axis }};
{%- endfor %}
