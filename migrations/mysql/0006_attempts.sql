-- Failed attempts at a job's work, so that work failing the same
-- way again and again ends (counted across restarts and replicas).
ALTER TABLE ig_jobs ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ig_jobs ADD COLUMN last_error LONGTEXT;
