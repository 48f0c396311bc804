// {{ dsl }}: block b takes tiles b, b + gridDim.x, ...
for (int {{ var }} = blockIdx.x; {{ var }} < {{ count }}; {{ var }} += gridDim.x) {
{%- for statement in body %}
{{ statement }}
{%- endfor %}
}
