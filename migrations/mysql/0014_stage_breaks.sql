-- Where the file's numbering jumps in each stage (`stage::breaks`):
-- a staged row is found by its number through these and the stage's
-- key, instead of through a `(job, row_no)` index of every stage table
-- (filled from the stages, and those indexes dropped, by
-- `adopt_breaks`).
CREATE TABLE ig_stage_breaks (
    job         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    seq         BIGINT NOT NULL,
    PRIMARY KEY (job, row_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
