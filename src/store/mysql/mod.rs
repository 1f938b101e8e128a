//! The MariaDB and MySQL store: a server shared by every replica, often
//! the business system's own. Sessions speak ANSI SQL quoting and UTC
//! (`connect.rs`), statements numbered `$n` are rewritten to `?`
//! (`exec.rs`), the work replicas take turns at is serialised by named
//! locks (`txn.rs`), and staged rows go by `LOAD DATA LOCAL INFILE`
//! where the server allows it, else as multi-row `INSERT`s sized to the
//! server's packet (`stage.rs`). What each file holds is in the table
//! of `store`'s documentation.

pub mod connect;
pub mod errors;
pub mod exec;
pub mod load;
pub mod lookup;
pub mod schema;
pub mod sql;
pub mod stage;
pub mod txn;
pub mod values;
