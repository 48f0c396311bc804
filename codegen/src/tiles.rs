//! How blocks that take tiles by number (stream-K units, persistent blocks) number a 1-D or
//! 2-D grid of tiles: tile t is (t % tiles_x, t / tiles_x), along x first.

use tessera_dsl::GridBinding;

use crate::c_expr;

/// The names of the tile counts along each grid dimension.
const TILE_COUNTS: [&str; 2] = ["tiles_x", "tiles_y"];

/// Each dimension's tile count as (name, C expression), and their product (`tiles_x * tiles_y`).
pub(crate) fn tile_counts(grid: &GridBinding) -> (Vec<(String, String)>, String) {
    let counts: Vec<(String, String)> =
        grid.extents.iter().zip(TILE_COUNTS).map(|(e, name)| (name.to_string(), c_expr(e))).collect();
    let product = counts.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(" * ");
    (counts, product)
}

/// The grid's variables as C expressions of `tile` (and `tiles_x`); `None` past two dimensions.
pub(crate) fn tile_coordinates(grid: &GridBinding) -> Option<Vec<(String, String)>> {
    match grid.vars.as_slice() {
        [x] => Some(vec![(x.clone(), "tile".to_string())]),
        [x, y] => Some(vec![(x.clone(), "tile % tiles_x".to_string()), (y.clone(), "tile / tiles_x".to_string())]),
        _ => None,
    }
}
