// {{ dsl }}: load a tile, wait, compute, wait
for (int {{ var }} = 0; {{ var }} < {{ count }}; ++{{ var }}) {
{%- for statement in body %}
{{ statement }}
{%- endfor %}
}
