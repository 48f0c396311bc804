// {{ buffer }}_dst + dst + offset: where each copy lands, `offset` elements past this part's first
{
{%- for line in before %}
    {{ line }}
{%- endfor %}
    if ({{ buffer }}_whole) {
{%- for line in whole %}
        {{ line }}
{%- endfor %}
    } else {
{%- for line in edge_setup %}
        {{ line }}
{%- endfor %}
        // a tile on the edge: the rows and columns left inside the tensor from this {{ first }}
        // first element; a copy from outside reads nothing and zero-fills
        const int rows_left = {{ rows_left }};
        const int cols_left = {{ cols_left }};
{%- for line in edge %}
        {{ line }}
{%- endfor %}
    }
}
