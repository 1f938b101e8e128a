//! Formula neutralising (API.md section 5): report and export cells a
//! spreadsheet could run get a leading apostrophe on the way out, and a
//! cell read back from a spreadsheet format (an export edited and
//! imported again, section 15; a corrected errored-rows file, section 11)
//! loses it again.

use crate::ingest::Cell;

/// Cells a spreadsheet could run as a formula get a leading apostrophe.
/// Spreadsheets skip spaces (a no-break space too) before `=`, read the
/// fullwidth signs as the ASCII ones, and split a cell at `;` or `,` when
/// that is the list separator of the locale that opens it (Indonesian Excel
/// splits at `;`): so any part of the cell that starts, after white space,
/// with a formula sign makes the cell dangerous.
pub fn neutralise(cell: &str) -> String {
    if runnable(cell) {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

/// Whether a spreadsheet could run the cell, which [`neutralise`] then
/// guards: asked alone, a cell that needs nothing is not copied.
pub fn runnable(cell: &str) -> bool {
    let formula = |part: &str| {
        matches!(
            part.trim_start().chars().next(),
            Some('=' | '+' | '-' | '@' | '＝' | '＋' | '－' | '＠')
        )
    };
    cell.starts_with(['\t', '\r']) || cell.split([';', ',', '\t']).any(formula)
}

/// The value a cell held before [`neutralise`]: the apostrophe comes off
/// only when neutralising what follows it gives the cell back, so a value
/// that begins with an apostrophe of its own (`'90s`) keeps it.
pub fn restore(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if neutralise(rest) == cell => rest,
        _ => cell,
    }
}

/// Restores every text cell of a row read from a spreadsheet format
/// ([`restore`]): an export's neutralised cells read back as the values
/// they were. A cell that does not begin with an apostrophe is not looked
/// at twice.
pub fn restore_cells(cells: &mut [Cell]) {
    for cell in cells {
        if let Cell::Text(text) = cell
            && text.starts_with('\'')
            && restore(text).len() < text.len()
        {
            text.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{neutralise, restore, restore_cells};
    use crate::ingest::Cell;

    #[test]
    fn a_row_read_back_loses_only_the_apostrophes_neutralising_added() {
        let mut cells = vec![
            Cell::Text("'=1+1".into()),
            Cell::Text("'90s".into()),
            Cell::Text("'-5".into()),
            Cell::Text("Budi".into()),
            Cell::Empty,
        ];
        restore_cells(&mut cells);
        let texts: Vec<String> = cells
            .iter()
            .map(|c| match c {
                Cell::Text(t) => t.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(texts, ["=1+1", "'90s", "-5", "Budi", ""]);
    }

    #[test]
    fn every_way_a_spreadsheet_finds_a_formula_is_neutralised() {
        for cell in [
            "=1+1",
            "+1",
            "-1",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
            " =1+1",
            "\u{a0}=1+1",
            "＝1+1",
            ";=1+1",
            "a;=HYPERLINK(\"x\")",
            "a, =1",
        ] {
            assert_eq!(neutralise(cell), format!("'{cell}"), "{cell:?}");
        }
        for cell in ["1+1", "Budi Santoso", "0812-3456", "a;b", ""] {
            assert_eq!(neutralise(cell), cell);
        }
    }

    #[test]
    fn a_neutralised_cell_reads_back_as_its_value() {
        for cell in ["=1+1", "-5", "@x", "\t=1", "a;=HYPERLINK(\"x\")", "''-2"] {
            assert_eq!(restore(&neutralise(cell)), cell, "{cell:?}");
        }
        for cell in ["'90s", "'", "'Budi", "Budi", "", "1+1"] {
            assert_eq!(
                restore(cell),
                cell,
                "an apostrophe of the value's own stays"
            );
        }
    }
}
