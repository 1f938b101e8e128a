-- Retention (API.md section 10).
-- `purged_at`: when the job's staged rows and stored file were purged
-- (once). The partial indexes keep the sweep's look-ups to the jobs
-- not purged yet, and to purged jobs whose stage rows are still being
-- removed (`stage` is set to NULL once they are all gone); the file
-- index finds the other jobs sharing a stored file.
ALTER TABLE ig_jobs ADD COLUMN purged_at TEXT;
CREATE INDEX ig_jobs_unpurged ON ig_jobs (state, updated_at) WHERE purged_at IS NULL;
CREATE INDEX ig_jobs_purging ON ig_jobs (id) WHERE purged_at IS NOT NULL AND stage IS NOT NULL;
CREATE INDEX ig_jobs_file ON ig_jobs (file_sha256);
