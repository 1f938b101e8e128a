-- Idempotency-Key records of uploads.
CREATE TABLE ig_idempotency (
    key_id      TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    job_id      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
