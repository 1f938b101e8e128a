-- Keys, stored files, jobs, their rows, errors, change log and events.
-- Text a key or index holds is VARCHAR (an InnoDB index holds at most
-- 3072 bytes, 768 utf8mb4 characters, over all its columns); other text
-- is LONGTEXT, unbounded like PostgreSQL's TEXT. Times are UTC. Unique
-- constraints carry the names PostgreSQL gives them.
CREATE TABLE ig_keys (
    id          VARCHAR(191) NOT NULL PRIMARY KEY,
    lookup      VARCHAR(191) NOT NULL,
    hash        LONGTEXT NOT NULL,
    name        LONGTEXT NOT NULL,
    role        LONGTEXT NOT NULL,
    modules     LONGTEXT NOT NULL,
    created_at  DATETIME(6) NOT NULL,
    expires_at  DATETIME(6),
    revoked_at  DATETIME(6),
    CONSTRAINT ig_keys_lookup_key UNIQUE (lookup)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_blobs (
    sha256      VARCHAR(191) NOT NULL PRIMARY KEY,
    upload_id   LONGTEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    created_at  DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_blob_chunks (
    upload_id   VARCHAR(191) NOT NULL,
    seq         BIGINT NOT NULL,
    data        LONGBLOB NOT NULL,
    created_at  DATETIME(6) NOT NULL,
    PRIMARY KEY (upload_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_jobs (
    id              VARCHAR(191) NOT NULL PRIMARY KEY,
    module          VARCHAR(191) NOT NULL,
    target_table    LONGTEXT NOT NULL,
    mode            LONGTEXT NOT NULL,
    on_error        LONGTEXT NOT NULL,
    options         LONGTEXT NOT NULL,
    simulated       BOOLEAN NOT NULL,
    file_name       LONGTEXT,
    file_format     LONGTEXT NOT NULL,
    file_bytes      BIGINT NOT NULL,
    file_sha256     VARCHAR(191) NOT NULL,
    submitter       VARCHAR(191) NOT NULL,
    state           VARCHAR(191) NOT NULL,
    version         BIGINT NOT NULL,
    counts          LONGTEXT NOT NULL,
    warnings        LONGTEXT NOT NULL,
    problem         LONGTEXT,
    gate            LONGTEXT,
    decisions       LONGTEXT NOT NULL,
    created_at      DATETIME(6) NOT NULL,
    updated_at      DATETIME(6) NOT NULL,
    lease_owner     LONGTEXT,
    lease_until     BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_jobs_state ON ig_jobs (state);
CREATE INDEX ig_jobs_module ON ig_jobs (module, id);
CREATE INDEX ig_jobs_submitter ON ig_jobs (submitter, id);
-- No ig_job_rows: the other backends staged rows in it before the
-- typed stage tables (step 4), and move what a database of that time
-- holds out of it at start. No MySQL database is of that time.
CREATE TABLE ig_job_errors (
    job_id      VARCHAR(191) NOT NULL,
    seq         BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    col         LONGTEXT,
    value       LONGTEXT,
    code        LONGTEXT NOT NULL,
    message     LONGTEXT NOT NULL,
    PRIMARY KEY (job_id, seq, n)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_job_changes (
    job_id      VARCHAR(191) NOT NULL,
    seq         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    op          LONGTEXT NOT NULL,
    nkey        LONGTEXT NOT NULL,
    "before"    LONGTEXT,
    after       LONGTEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_job_events (
    job_id      VARCHAR(191) NOT NULL,
    n           BIGINT NOT NULL,
    at          DATETIME(6) NOT NULL,
    event       LONGTEXT NOT NULL,
    from_state  LONGTEXT,
    to_state    LONGTEXT NOT NULL,
    actor       LONGTEXT,
    comment     LONGTEXT,
    detail      LONGTEXT,
    seq         BIGINT NOT NULL,
    prev_hash   LONGTEXT NOT NULL,
    hash        LONGTEXT NOT NULL,
    PRIMARY KEY (job_id, n),
    CONSTRAINT ig_job_events_seq_key UNIQUE (seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- The locks replicas take turns with, one row each, taken FOR UPDATE
-- (store::mysql::txn): PostgreSQL's advisory locks have no MySQL twin
-- that ends with the transaction. Rows for tables are made as needed.
CREATE TABLE ig_locks (
    name        VARCHAR(191) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO ig_locks (name) VALUES ('7310574'), ('7310575'), ('7310576'), ('7310577');
