// {{ dsl }}: {{ what }} → {{ buffer }}[{{ stage }}] by cp.async, {{ bytes }} B per copy;
// the thread's first element on both sides, its other copies at constant offsets from it
{%- for (name, value) in origins %}
const int {{ name }} = {{ value }};
{%- endfor %}
const {{ element }}* {{ buffer }}_src = &{{ src_first }};
const tessera_shared_ref {{ buffer }}_dst = tessera_shared_address(&{{ dst_first }});
const bool {{ buffer }}_whole = {{ whole_tile }};
