// {{ dsl }}
// thread (thread_row, thread_col) of a {{ down }} × {{ across }} grid holds {{ holds }}
{%- if !declares_coordinates %}
// (the grid of the kernel's first thread-tile fragment)
{%- else if let Some((rows, cols)) = warp_layout %}
// each warp holds a {{ rows }} × {{ cols }} block of thread tiles
const int thread_row = tid / 32 / ({{ across }} / {{ cols }}) * {{ rows }} + tid % 32 / {{ cols }};
const int thread_col = tid / 32 % ({{ across }} / {{ cols }}) * {{ cols }} + tid % 32 % {{ cols }};
{%- else %}
const int thread_row = tid / ({{ cols }} / {{ thread_cols }});
const int thread_col = tid % ({{ cols }} / {{ thread_cols }});
{%- endif %}
{{ element }} {{ name }}[{{ thread_rows }}][{{ thread_cols }}] = {};
