//! Rebuilds the crate when a migration is added or changed:
//! `sqlx::migrate!` embeds the files of `migrations/` (`store::schema`),
//! and Cargo does not see a new file there by itself.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
