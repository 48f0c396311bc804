// {{ dsl }}
{%- for line in placement %}
// {{ line }}
{%- endfor %}
{%- for (name, value) in origins %}
const int {{ name }} = {{ value }};
{%- endfor %}
float {{ name }}[{{ warp_rows_name }} / 16][{{ warp_cols_name }} / 8][4] = {};
