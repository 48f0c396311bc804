// {{ dsl }}
// thread (thread_row, thread_col) of a {{ down }} × {{ across }} grid holds {{ holds }}
const int thread_row = tid / ({{ cols }} / {{ thread_cols }});
const int thread_col = tid % ({{ cols }} / {{ thread_cols }});
{{ element }} {{ name }}[{{ thread_rows }}][{{ thread_cols }}] = {};
