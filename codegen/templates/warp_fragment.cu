// {{ dsl }}
// warp w holds the {{ warp_rows }} × {{ warp_cols }} tile at (warp_row0, warp_col0) of a {{ down }} × {{ across }} grid of warps: {{ tiles_down }} × {{ tiles_across }}
// mma.sync tiles of 16 × 8, four values of each in every lane
const int warp_row0 = tid / 32 / {{ across }} * {{ warp_rows_name }};
const int warp_col0 = tid / 32 % {{ across }} * {{ warp_cols_name }};
float {{ name }}[{{ warp_rows_name }} / 16][{{ warp_cols_name }} / 8][4] = {};
