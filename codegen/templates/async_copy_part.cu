// {{ buffer }}_dst + dst + offset: where each copy lands, `offset` elements past this part's first
{
{%- match part %}
{%- when Some with (part) %}
    // {{ buffer }}: part {{ part.index }} of {{ part.count }} of this thread's {{ copies }} copies
{%- match part.step %}
{%- when Some with ((src_step, dst_step)) %}
    // from where the previous part left off; the next part's start is computed first, so the
    // copies keep their own registers (overwriting one a copy still reads would wait for it)
    const {{ element }}* next_src = {{ buffer }}_next_src;
    const int next_dst = {{ buffer }}_next_dst;
    {{ buffer }}_next_src += {{ src_step }};
    {{ buffer }}_next_dst += {{ dst_step }};
    if ({{ buffer }}_whole) {
        const {{ element }}* src = next_src;
        const int dst = next_dst;
{%- for line in whole %}
        {{ line }}
{%- endfor %}
    } else {
        const int row = {{ part.row }};
        const int col = {{ part.col }};
        const {{ element }}* src = {{ buffer }}_src + {{ part.src_offset }};
        const int dst = {{ part.dst_offset }};
        // a tile on the edge: the rows and columns left inside the tensor from this part's
        // first element; a copy from outside reads nothing and zero-fills
        const int rows_left = {{ rows_left }};
        const int cols_left = {{ cols_left }};
{%- for line in edge %}
        {{ line }}
{%- endfor %}
    }
{%- when None %}
    const int row = {{ part.row }};
    const int col = {{ part.col }};
    const {{ element }}* src = {{ buffer }}_src + {{ part.src_offset }};
    const int dst = {{ part.dst_offset }};
    if ({{ buffer }}_whole) {
{%- for line in whole %}
        {{ line }}
{%- endfor %}
    } else {
        // a tile on the edge: the rows and columns left inside the tensor from this part's
        // first element; a copy from outside reads nothing and zero-fills
        const int rows_left = {{ rows_left }};
        const int cols_left = {{ cols_left }};
{%- for line in edge %}
        {{ line }}
{%- endfor %}
    }
{%- endmatch %}
{%- when None %}
    const {{ element }}* src = {{ buffer }}_src;
    const int dst = 0;
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
{%- endmatch %}
}
