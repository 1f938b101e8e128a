-- Exports of module tables (API.md section 15). Each is one ledger link
-- (`module_exported`), its subject the export's id; this row says which
-- module it read, so that the event feed shows the link within the
-- module's scope, and keeps what was asked and how many rows left.
CREATE TABLE ig_exports (
    id          TEXT PRIMARY KEY,
    module      TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    format      TEXT NOT NULL,
    filters     TEXT NOT NULL,
    row_count   BIGINT NOT NULL,
    complete    BOOLEAN NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL
);
CREATE INDEX ig_exports_module ON ig_exports (module, started_at);
