//! Dropdowns from a column's allowed values, in the first sheet of a
//! workbook the service writes (an export, a template): a person editing
//! the file picks a value the import accepts instead of typing one.

use rust_xlsxwriter::{DataValidation, Formula, Workbook, XlsxError};

use crate::catalog::Module;

/// The name of the hidden sheet holding allowed values a dropdown's own
/// list cannot: longer than Excel's 255 characters, or with a comma.
pub const LISTS_SHEET: &str = "_lists";

/// Adds a dropdown to every column of `module` with allowed values, from
/// the second row through `last_row`, in the workbook's first sheet, the
/// module's columns in catalog order from column A. Lists a dropdown
/// cannot hold itself go to a hidden sheet added after the first, so that
/// the module's sheet stays the one an import reads.
pub fn add(book: &mut Workbook, module: &Module, last_row: u32) -> Result<(), XlsxError> {
    let mut long_lists = Vec::new();
    for (i, c) in module.columns.iter().enumerate() {
        let Some(allowed) = &c.allowed else { continue };
        let col = i as u16;
        // A comma in a value would split it in a list of its own.
        let own = (!allowed.iter().any(|v| v.contains(',')))
            .then(|| {
                DataValidation::new()
                    .allow_list_strings(allowed.as_slice())
                    .ok()
            })
            .flatten();
        match own {
            Some(list) => {
                let sheet = book.worksheet_from_index(0)?;
                sheet.add_data_validation(1, col, last_row, col, &list)?;
            }
            None => long_lists.push((col, allowed)),
        }
    }
    if long_lists.is_empty() {
        return Ok(());
    }
    let lists = book.add_worksheet();
    lists.set_name(LISTS_SHEET)?.set_hidden(true);
    for (k, (_, allowed)) in long_lists.iter().enumerate() {
        for (r, v) in allowed.iter().enumerate() {
            lists.write_string(r as u32, k as u16, v)?;
        }
    }
    let sheet = book.worksheet_from_index(0)?;
    for (k, (col, allowed)) in long_lists.iter().enumerate() {
        let letter = column_letters(k as u16);
        let range = format!("={LISTS_SHEET}!${letter}$1:${letter}${}", allowed.len());
        let list = DataValidation::new().allow_list_formula(Formula::new(range));
        sheet.add_data_validation(1, *col, last_row, *col, &list)?;
    }
    Ok(())
}

/// `A`, `B`, …, `Z`, `AA`, …: a sheet's column name.
fn column_letters(mut col: u16) -> String {
    let mut letters = Vec::new();
    loop {
        letters.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    letters.iter().rev().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheet_columns_are_lettered_as_spreadsheets_letter_them() {
        assert_eq!(column_letters(0), "A");
        assert_eq!(column_letters(25), "Z");
        assert_eq!(column_letters(26), "AA");
        assert_eq!(column_letters(701), "ZZ");
        assert_eq!(column_letters(702), "AAA");
    }
}
