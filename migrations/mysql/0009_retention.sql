-- Retention (API.md section 10).
-- `purged_at`: when the job's staged rows and stored file were purged
-- (once). The indexes keep the sweep's look-ups to the jobs not purged
-- yet, and to purged jobs whose stage rows are still being removed
-- (`stage` is set to NULL once they are all gone); the file index finds
-- the other jobs sharing a stored file.
ALTER TABLE ig_jobs ADD COLUMN purged_at DATETIME(6);
-- MySQL has no partial indexes: `purged_at IS NULL` is looked up through the index's first column instead.
CREATE INDEX ig_jobs_unpurged ON ig_jobs (purged_at, state, updated_at);
-- MySQL has no partial indexes, and one on (id) alone would repeat the primary key: this one reaches the jobs that still have a stage (InnoDB appends id to it).
CREATE INDEX ig_jobs_purging ON ig_jobs (stage, purged_at);
CREATE INDEX ig_jobs_file ON ig_jobs (file_sha256);
