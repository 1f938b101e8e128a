-- The saved mapping an upload was read with (JSON: its id and the
-- mapping as it was applied), so a retried validation, the mapping
-- view and a revision of the job see the same mapping after the
-- saved one changes or goes.
ALTER TABLE ig_jobs ADD COLUMN mapping_applied LONGTEXT;
