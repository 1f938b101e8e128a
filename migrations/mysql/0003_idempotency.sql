-- Idempotency-Key records of uploads.
CREATE TABLE ig_idempotency (
    key_id      VARCHAR(191) NOT NULL,
    idem_key    VARCHAR(577) NOT NULL,
    fingerprint LONGTEXT NOT NULL,
    job_id      LONGTEXT NOT NULL,
    created_at  DATETIME(6) NOT NULL,
    PRIMARY KEY (key_id, idem_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
