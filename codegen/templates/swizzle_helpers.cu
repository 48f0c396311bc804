// `.swizzle_bytes(SPAN)`: where logical column `col` of row `row` is stored. The 16-byte chunks
// of a row XOR the index of its 128-byte line (rows shorter than a line share one) modulo
// SPAN / 16 — TMA's SPAN-byte swizzle — so the 8 rows of 16 bytes that ldmatrix reads at once
// land in 8 different bank groups while every chunk stays whole for 16-byte access.
template <int SPAN, int ROW_BYTES, int ELEMENT_BYTES>
__device__ __forceinline__ int tessera_swizzled(int row, int col)
{
    constexpr int ROWS_PER_LINE = ROW_BYTES < 128 ? 128 / ROW_BYTES : 1;
    return col ^ (row / ROWS_PER_LINE % (SPAN / 16)) * (16 / ELEMENT_BYTES);
}
