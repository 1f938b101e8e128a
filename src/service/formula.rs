//! Formula neutralising (API.md section 5): report cells a spreadsheet
//! could run get a leading apostrophe on the way out, and a cell sent back
//! in a corrected errored-rows file (section 11) loses it again.

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

#[cfg(test)]
mod tests {
    use super::{neutralise, restore};

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
