-- Row warnings (a reference the referenced table does not hold,
-- with on_missing = "warn"): like errors, but the row stays valid.
CREATE TABLE ig_job_warnings (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    col         TEXT,
    value       TEXT,
    code        TEXT NOT NULL,
    message     TEXT NOT NULL,
    PRIMARY KEY (job_id, seq, n)
);
