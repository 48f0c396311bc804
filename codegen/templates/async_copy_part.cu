// {{ buffer }}_dst + dst + offset: where each copy lands, `offset` elements past this part's first
{
{%- match part %}
{%- when Some with (part) %}
    // {{ buffer }}: part {{ part.index }} of {{ part.count }} of this thread's {{ copies }} copies
    const int row = {{ part.row }};
    const int col = {{ part.col }};
    const {{ element }}* src = {{ buffer }}_src + {{ part.src_offset }};
    const int dst = {{ part.dst_offset }};
{%- when None %}
    const {{ element }}* src = {{ buffer }}_src;
    const int dst = 0;
{%- endmatch %}
    if ({{ buffer }}_whole) {
{%- for line in whole %}
        {{ line }}
{%- endfor %}
    } else {
        // a tile on the edge: the rows and columns left inside the tensor from this thread's
        // first element; a copy from outside reads nothing and zero-fills
        const int rows_left = {{ rows_left }};
        const int cols_left = {{ cols_left }};
{%- for line in edge %}
        {{ line }}
{%- endfor %}
    }
}
