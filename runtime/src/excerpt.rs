/// The numbered lines of `source` around each of `lines` (1-based), two lines of context
/// each side, the named line marked `>`: what a compile error shows of the kernel.
///
/// ```ignore
/// let excerpt = source_excerpt("a\nb\nc", [2]);   // " 1 | a\n>2 | b\n 3 | c\n ..."
/// ```
pub(crate) fn source_excerpt(source: &str, lines: impl IntoIterator<Item = usize>) -> String {
    let text: Vec<&str> = source.lines().collect();
    let mut wanted: Vec<usize> = lines.into_iter().filter(|l| *l > 0).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = String::new();
    for line in wanted {
        let first = line.saturating_sub(2).max(1);
        let last = (line + 2).min(text.len());
        for number in first..=last {
            let marker = if number == line { ">" } else { " " };
            if let Some(content) = text.get(number - 1) {
                out.push_str(&format!("{marker}{number:5} | {content}\n"));
            }
        }
        out.push_str("      ...\n");
    }
    out
}
