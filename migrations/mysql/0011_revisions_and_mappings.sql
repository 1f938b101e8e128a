-- Revisions (API.md section 11): the job a job revises, what the
-- revision changes (JSON: mapping, fixes, exclusions, who), and the
-- revision that took a job's place; the job whose id files the row
-- warnings of a stage handed to a revision; mappings saved for a
-- module under a file's exact set of headers (`header_set`: the sorted
-- headers as JSON, the lookup key).
ALTER TABLE ig_jobs ADD COLUMN revision_of LONGTEXT;
ALTER TABLE ig_jobs ADD COLUMN revision LONGTEXT;
ALTER TABLE ig_jobs ADD COLUMN revised_as LONGTEXT;
ALTER TABLE ig_jobs ADD COLUMN stage_owner LONGTEXT;
-- A file's set of headers can outgrow what an index holds (768
-- characters): `header_set` stays unbounded and its SHA-256, a generated
-- column the service never writes, is what the unique index holds.
CREATE TABLE ig_mappings (
    id                VARCHAR(191) NOT NULL PRIMARY KEY,
    module            VARCHAR(191) NOT NULL,
    header_set        LONGTEXT NOT NULL,
    headers           LONGTEXT NOT NULL,
    mapping           LONGTEXT NOT NULL,
    created_by        LONGTEXT NOT NULL,
    created_at        DATETIME(6) NOT NULL,
    header_set_sha256 VARCHAR(64) GENERATED ALWAYS AS (SHA2(header_set, 256)) STORED
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE UNIQUE INDEX ig_mappings_headers ON ig_mappings (module, header_set_sha256);
