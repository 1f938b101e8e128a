mod column;
mod infile;
mod ping;
mod query;
mod quit;
mod row;

pub(crate) use column::{ColumnDefinition, ColumnFlags, ColumnType};
pub(crate) use infile::InfileData;
pub(crate) use ping::Ping;
pub(crate) use query::Query;
pub(crate) use quit::Quit;
pub(crate) use row::TextRow;
