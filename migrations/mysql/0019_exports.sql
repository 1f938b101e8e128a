-- Exports of module tables (API.md section 15). Each is one ledger link
-- (`module_exported`), its subject the export's id; this row says which
-- module it read, so that the event feed shows the link within the
-- module's scope, and keeps what was asked and how many rows left.
CREATE TABLE ig_exports (
    id          VARCHAR(191) NOT NULL PRIMARY KEY,
    module      VARCHAR(191) NOT NULL,
    key_id      LONGTEXT NOT NULL,
    format      LONGTEXT NOT NULL,
    filters     LONGTEXT NOT NULL,
    row_count   BIGINT NOT NULL,
    complete    BOOLEAN NOT NULL,
    started_at  DATETIME(6) NOT NULL,
    finished_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_exports_module ON ig_exports (module, started_at);
