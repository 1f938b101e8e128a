-- Workbooks (API.md section 16): a job whose file holds several modules'
-- rows. Each part is a row of ig_jobs of its own, with its module, sheet,
-- stage, counts and row errors, so that validation, the preview, the
-- commit and the rollback of a part are those of a one-module job. A part
-- names its workbook job (`parent_id`) and its place in reference order
-- (`part_no`); it has no events of its own and is never worked on, listed
-- or counted by itself: the workbook job is. A workbook job's `module` and
-- `target_table` are '' (it has no one module).
ALTER TABLE ig_jobs ADD COLUMN parent_id VARCHAR(191);
ALTER TABLE ig_jobs ADD COLUMN part_no INT;
CREATE INDEX ig_jobs_parent ON ig_jobs (parent_id, part_no);
