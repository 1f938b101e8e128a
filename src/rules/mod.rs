//! Rules: what the business expects of a row beyond its column types
//! (API.md section 14). A module's rule set is data: normalizers that
//! rewrite a cell's text before it is read as its type, checks (CEL
//! expressions over the row's typed values) and unique sets of columns.

pub mod normalize;

pub use normalize::Normalizer;
