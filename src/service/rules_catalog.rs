//! The rule sets a catalog file ships as its modules' version 1 (API.md
//! section 14), compiled once when the service starts: a catalog whose
//! rules do not compile refuses to start, naming the module, the rule and
//! what is wrong, rather than failing rows at validation time.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::ids::ModuleKey;
use crate::rules::{self, Compiled, Rule};

/// Each module's version-1 rule set, compiled; a module without rules has
/// the empty set.
#[derive(Debug, Default)]
pub struct CatalogRules {
    sets: HashMap<ModuleKey, (Vec<Rule>, Arc<Compiled>)>,
    empty: Arc<Compiled>,
}

impl CatalogRules {
    /// Compiles the rules of every module of `catalog` that has some.
    pub fn compile(catalog: &Catalog) -> anyhow::Result<CatalogRules> {
        let mut sets = HashMap::new();
        let mut problems = Vec::new();
        for module in catalog.modules().iter().filter(|m| !m.rules.is_empty()) {
            let json = serde_json::Value::Array(module.rules.clone());
            let compiled = rules::parse(&json)
                .and_then(|set| rules::compile(module, &set).map(|c| (set, Arc::new(c))));
            match compiled {
                Ok(set) => {
                    sets.insert(module.key.clone(), set);
                }
                Err(found) => {
                    problems.extend((found.iter()).map(|p| format!("module {}: {p}", module.key)))
                }
            }
        }
        if !problems.is_empty() {
            anyhow::bail!("catalog: the rules do not compile: {}", problems.join("; "));
        }
        Ok(CatalogRules {
            sets,
            empty: Arc::default(),
        })
    }

    /// Module `key`'s version-1 rule set, compiled.
    pub fn of(&self, key: &str) -> Arc<Compiled> {
        Arc::clone(self.sets.get(key).map_or(&self.empty, |(_, c)| c))
    }

    /// Module `key`'s version-1 rules as the catalog writes them.
    pub fn rules_of(&self, key: &str) -> Vec<Rule> {
        self.sets
            .get(key)
            .map(|(r, _)| r.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOG: &str = r#"
[[module]]
key = "customers"
table = "uc_customers"
natural_key = ["wa_number"]

[[module.column]]
name = "wa_number"
type = "text"
required = true

[[module.column]]
name = "city"
type = "text"

[[module.rules]]
id = "wa"
column = "wa_number"
normalize = "phone_id"
"#;

    #[test]
    fn a_catalog_ships_its_rules_compiled() {
        let catalog = Catalog::from_toml(CATALOG).unwrap();
        let sets = CatalogRules::compile(&catalog).unwrap();
        let set = sets.of("customers");
        assert_eq!(
            set.normalize(0, "0812-3456-7890").unwrap(),
            "+6281234567890"
        );
        assert!(sets.of("orders").is_empty());
        assert!(
            CatalogRules::compile(&Catalog::builtin())
                .unwrap()
                .sets
                .is_empty()
        );
    }

    #[test]
    fn a_rule_that_does_not_compile_is_named_with_its_module() {
        let bad = format!(
            "{CATALOG}\n[[module.rules]]\nid = \"city_ok\"\ncheck = \"row.town == 'x'\"\nmessage = \"m\"\n"
        );
        let catalog = Catalog::from_toml(&bad).unwrap();
        let e = CatalogRules::compile(&catalog).unwrap_err().to_string();
        assert!(e.contains("module customers: rule city_ok:"), "{e}");
        assert!(e.contains("row.town"), "{e}");
    }
}
