-- Typed stage tables, one per module (created with the module
-- tables, see `stage`): jobs get a stage number and the list of the
-- columns their file gave. Existing jobs are numbered here. The change
-- log goes: a rollback restores the before-images staged with the rows.
CREATE TABLE ig_counters (
    name        VARCHAR(191) NOT NULL PRIMARY KEY,
    value       BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE ig_jobs ADD COLUMN stage BIGINT;
ALTER TABLE ig_jobs ADD COLUMN columns LONGTEXT;
-- The numbering is a derived table with a window function, which MySQL
-- and MariaDB materialise before the update reads ig_jobs again.
UPDATE ig_jobs
    JOIN (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM ig_jobs) AS numbered
        ON ig_jobs.id = numbered.id
    SET ig_jobs.stage = numbered.n;
INSERT INTO ig_counters (name, value) SELECT 'stage', COALESCE(MAX(stage), 0) FROM ig_jobs;
DROP TABLE ig_job_changes;
