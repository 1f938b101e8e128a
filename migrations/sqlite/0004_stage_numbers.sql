-- Typed stage tables, one per module (created with the module
-- tables, see `stage`): jobs get a stage number and the list of the
-- columns their file gave. Existing jobs are numbered here; their rows
-- move out of ig_job_rows in `adopt_job_rows`. The change log goes: a
-- rollback restores the before-images staged with the rows.
CREATE TABLE ig_counters (
    name        TEXT PRIMARY KEY,
    value       BIGINT NOT NULL
);
ALTER TABLE ig_jobs ADD COLUMN stage BIGINT;
ALTER TABLE ig_jobs ADD COLUMN columns TEXT;
UPDATE ig_jobs SET stage = numbered.n
    FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM ig_jobs) AS numbered
    WHERE ig_jobs.id = numbered.id;
INSERT INTO ig_counters (name, value) SELECT 'stage', COALESCE(MAX(stage), 0) FROM ig_jobs;
DROP TABLE ig_job_changes;
