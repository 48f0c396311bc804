//! How blocks that take tiles by number (stream-K units, persistent blocks) number a 1-D to
//! 3-D grid of tiles: tile t is (t % tiles_x, t / tiles_x % tiles_y, t / (tiles_x · tiles_y)),
//! along x first.

use tessera_dsl::GridBinding;

use crate::c_expr;

/// The names of the tile counts along each grid dimension.
const TILE_COUNTS: [&str; 3] = ["tiles_x", "tiles_y", "tiles_z"];

/// Each dimension's tile count as (name, C expression), and their product (`tiles_x * tiles_y`).
pub(crate) fn tile_counts(grid: &GridBinding) -> (Vec<(String, String)>, String) {
    let counts: Vec<(String, String)> =
        grid.extents.iter().zip(TILE_COUNTS).map(|(e, name)| (name.to_string(), c_expr(e))).collect();
    let product = counts.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(" * ");
    (counts, product)
}

/// The grid's variables as C expressions of `tile` (and `tiles_x`, `tiles_y`), after any
/// declarations they need; `None` past three dimensions. With `.grouped(n)` tile t lies in group
/// t / (n · tiles_x) of n tile rows (fewer in the last), which is walked down its columns.
pub(crate) fn tile_coordinates(grid: &GridBinding) -> Option<Vec<(String, String)>> {
    match (grid.vars.as_slice(), grid.grouped) {
        ([x], _) => Some(vec![(x.clone(), "tile".to_string())]),
        ([x, y], None) => {
            Some(vec![(x.clone(), "tile % tiles_x".to_string()), (y.clone(), "tile / tiles_x".to_string())])
        }
        ([x, y, z], None) => Some(vec![
            (x.clone(), "tile % tiles_x".to_string()),
            (y.clone(), "tile / tiles_x % tiles_y".to_string()),
            (z.clone(), "tile / (tiles_x * tiles_y)".to_string()),
        ]),
        ([x, y], Some(rows)) => Some(vec![
            ("group_first_row".into(), format!("tile / ({rows} * tiles_x) * {rows}")),
            ("group_rows".into(), format!("min(tiles_y - group_first_row, {rows})")),
            ("in_group".into(), format!("tile % ({rows} * tiles_x)")),
            (x.clone(), "in_group / group_rows".to_string()),
            (y.clone(), "group_first_row + in_group % group_rows".to_string()),
        ]),
        _ => None,
    }
}

/// `.zigzag()`: the tile a block takes at loop value `turn` (`first`, `first + step`, ..): the
/// round's `turn - first`-th tile on even rounds, the same from the round's end on odd ones
/// (the last round may be short, so its end is `tiles`).
pub(crate) fn zigzag_tile(turn: &str, first: &str, step: &str) -> String {
    let round = format!("({turn} - {first})");
    format!("{turn} / ({step}) % 2 == 0 ? {turn} : {round} + min({step}, tiles - {round}) - 1 - ({first})")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tiles block `first` of `step` takes, as `zigzag_tile`'s C computes them.
    fn zigzag_walk(tiles: i64, first: i64, step: i64) -> Vec<i64> {
        (first..tiles)
            .step_by(step as usize)
            .map(|turn| {
                let round = turn - first;
                if turn / step % 2 == 0 {
                    turn
                } else {
                    round + step.min(tiles - round) - 1 - first
                }
            })
            .collect()
    }

    #[test]
    fn zigzag_tiles_cover_every_tile_once_reversing_every_other_round() {
        for (tiles, blocks) in [(2048, 132), (100, 132), (132, 132), (265, 132), (7, 3), (1, 1)] {
            let mut seen: Vec<i64> = (0..blocks).flat_map(|block| zigzag_walk(tiles, block, blocks)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..tiles).collect::<Vec<_>>(), "{tiles} tiles on {blocks} blocks");
        }
        // 7 tiles on 3 blocks: rounds {0, 1, 2} forward, {3, 4, 5} backward, {6} alone
        assert_eq!(zigzag_walk(7, 0, 3), [0, 5, 6]);
        assert_eq!(zigzag_walk(7, 2, 3), [2, 3]);
        // a short last round reversed: 5 tiles, round {3, 4} taken by blocks 0 and 1 as 4, 3
        assert_eq!(zigzag_walk(5, 0, 3), [0, 4]);
        assert_eq!(zigzag_walk(5, 1, 3), [1, 3]);
        assert_eq!(zigzag_walk(5, 2, 3), [2]);
    }

    #[test]
    fn the_zigzag_tile_renders_as_the_walk_computes_it() {
        assert_eq!(
            zigzag_tile("turn", "blockIdx.x", "gridDim.x"),
            "turn / (gridDim.x) % 2 == 0 ? turn : (turn - blockIdx.x) + min(gridDim.x, tiles - (turn - blockIdx.x)) - 1 - (blockIdx.x)"
        );
    }

    /// Tile numbers → (x, y) the way the rendered C computes them.
    fn walk(tiles_x: i64, tiles_y: i64, rows: i64) -> Vec<(i64, i64)> {
        (0..tiles_x * tiles_y)
            .map(|tile| {
                let first = tile / (rows * tiles_x) * rows;
                let group_rows = (tiles_y - first).min(rows);
                let in_group = tile % (rows * tiles_x);
                (in_group / group_rows, first + in_group % group_rows)
            })
            .collect()
    }

    #[test]
    fn grouped_tiles_cover_every_tile_once_walking_down_each_group() {
        for (tiles_x, tiles_y, rows) in [(5, 7, 2), (32, 32, 8), (3, 1, 8), (1, 9, 4)] {
            let order = walk(tiles_x, tiles_y, rows);
            let mut seen = order.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as i64, tiles_x * tiles_y, "{tiles_x} × {tiles_y} by {rows}");
            assert!(seen.iter().all(|&(x, y)| x < tiles_x && y < tiles_y));
        }
        // 5 × 7 tiles in groups of 2 rows: down the first group's columns, then the next group
        assert_eq!(walk(5, 7, 2)[..4], [(0, 0), (0, 1), (1, 0), (1, 1)]);
        // the last group has one row
        assert_eq!(walk(5, 7, 2)[30..], [(0, 6), (1, 6), (2, 6), (3, 6), (4, 6)]);
    }

    #[test]
    fn the_grouped_coordinates_render_as_the_walk_computes_them() {
        let grid = GridBinding {
            vars: vec!["bx".into(), "by".into()],
            extents: vec![tessera_dsl::Expr::int(5), tessera_dsl::Expr::int(7)],
            stream_k: false,
            grouped: Some(2),
            zigzag: false,
            dynamic: false,
            origin: tessera_dsl::Origin::default(),
        };
        let names: Vec<String> = tile_coordinates(&grid).unwrap().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["group_first_row", "group_rows", "in_group", "bx", "by"]);
    }
}
