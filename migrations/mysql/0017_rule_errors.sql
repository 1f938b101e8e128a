-- The id of the module's rule a row error broke (a check, a unique
-- rule), so the errors report names the rule as the preview does;
-- null for every other error.
ALTER TABLE ig_job_errors ADD COLUMN rule LONGTEXT;
