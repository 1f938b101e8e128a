//! Reference order (API.md section 16): a referenced module before the
//! modules that refer to it, so that a workbook's parts are validated and
//! committed after the parts they name, and rolled back before them. A
//! reference of a module to itself orders nothing; a circle of references
//! between modules has no order, and is a catalog error.

use std::sync::Arc;

use super::Module;

/// Whether module `m` has a reference naming `other` (not itself).
fn names(all: &[Arc<Module>], m: &str, other: &str) -> bool {
    m != other
        && all
            .iter()
            .find(|x| x.key.as_str() == m)
            .is_some_and(|x| x.references.iter().any(|r| r.module == other))
}

/// `modules` (keys of the catalog's `all`) in reference order; among
/// modules neither of which names the other, in the order given. `Err`
/// with the modules left when their references go round in a circle.
pub fn reference_order<'a>(
    all: &[Arc<Module>],
    modules: &[&'a str],
) -> Result<Vec<&'a str>, Vec<&'a str>> {
    let mut left: Vec<&str> = modules.to_vec();
    let mut ordered = Vec::with_capacity(left.len());
    while !left.is_empty() {
        // The first module that names none of those still left.
        let Some(next) =
            (0..left.len()).find(|&i| !left.iter().any(|&other| names(all, left[i], other)))
        else {
            return Err(left);
        };
        ordered.push(left.remove(next));
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn a_referenced_module_comes_before_its_referrers() {
        let catalog = Catalog::builtin();
        let order = reference_order(catalog.modules(), &["payments", "orders", "products"]);
        let order = order.unwrap();
        let at = |m| order.iter().position(|x| *x == m).unwrap();
        assert!(at("products") < at("orders"), "{order:?}");
        assert_eq!(order.len(), 3);
    }

    #[test]
    fn a_circle_of_references_is_a_catalog_error() {
        let module = |key: &str, names: &str| {
            format!(
                "[[module]]\nkey = \"{key}\"\ntable = \"t_{key}\"\nnatural_key = [\"no\"]\n\
                 [[module.column]]\nname = \"no\"\ntype = \"text\"\nrequired = true\n\
                 [[module.column]]\nname = \"other\"\ntype = \"text\"\n\
                 [[module.reference]]\ncolumn = \"other\"\nmodule = \"{names}\"\nkey = \"no\"\non_missing = \"warn\"\n"
            )
        };
        let text = [module("a", "b"), module("b", "c"), module("c", "a")].join("\n");
        let found = Catalog::from_toml(&text);
        let Err(crate::catalog::CatalogError::Invalid(why)) = found else {
            panic!("a circle is refused: {:?}", found.map(|_| ()));
        };
        assert!(why.contains("go round in a circle"), "{why}");
        assert!(why.contains("a, b, c"), "{why}");
        // A module naming itself is no circle.
        assert!(Catalog::from_toml(&module("a", "a")).is_ok());
    }

    #[test]
    fn every_built_in_module_has_a_place() {
        let catalog = Catalog::builtin();
        let keys = catalog.keys();
        assert_eq!(reference_order(catalog.modules(), &keys).unwrap().len(), 26);
    }
}
