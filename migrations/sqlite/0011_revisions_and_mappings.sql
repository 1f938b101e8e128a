-- Revisions (API.md section 11): the job a job revises, what the
-- revision changes (JSON: mapping, fixes, exclusions, who), and the
-- revision that took a job's place; the job whose id files the row
-- warnings of a stage handed to a revision; mappings saved for a
-- module under a file's exact set of headers (`header_set`: the sorted
-- headers as JSON, the lookup key).
ALTER TABLE ig_jobs ADD COLUMN revision_of TEXT;
ALTER TABLE ig_jobs ADD COLUMN revision TEXT;
ALTER TABLE ig_jobs ADD COLUMN revised_as TEXT;
ALTER TABLE ig_jobs ADD COLUMN stage_owner TEXT;
CREATE TABLE ig_mappings (
    id          TEXT PRIMARY KEY,
    module      TEXT NOT NULL,
    header_set  TEXT NOT NULL,
    headers     TEXT NOT NULL,
    mapping     TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX ig_mappings_headers ON ig_mappings (module, header_set);
