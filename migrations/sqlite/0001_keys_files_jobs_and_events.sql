-- Keys, stored files, jobs, their rows, errors, change log and events.
CREATE TABLE ig_keys (
    id          TEXT PRIMARY KEY,
    lookup      TEXT NOT NULL UNIQUE,
    hash        TEXT NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    modules     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    revoked_at  TEXT
);
CREATE TABLE ig_blobs (
    sha256      TEXT PRIMARY KEY,
    upload_id   TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE TABLE ig_blob_chunks (
    upload_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    data        BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
CREATE TABLE ig_jobs (
    id              TEXT PRIMARY KEY,
    module          TEXT NOT NULL,
    target_table    TEXT NOT NULL,
    mode            TEXT NOT NULL,
    on_error        TEXT NOT NULL,
    options         TEXT NOT NULL,
    simulated       BOOLEAN NOT NULL,
    file_name       TEXT,
    file_format     TEXT NOT NULL,
    file_bytes      BIGINT NOT NULL,
    file_sha256     TEXT NOT NULL,
    submitter       TEXT NOT NULL,
    state           TEXT NOT NULL,
    version         BIGINT NOT NULL,
    counts          TEXT NOT NULL,
    warnings        TEXT NOT NULL,
    problem         TEXT,
    gate            TEXT,
    decisions       TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT
);
CREATE INDEX ig_jobs_state ON ig_jobs (state);
CREATE INDEX ig_jobs_module ON ig_jobs (module, id);
CREATE INDEX ig_jobs_submitter ON ig_jobs (submitter, id);
CREATE TABLE ig_job_rows (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    action      TEXT NOT NULL,
    nkey        TEXT,
    vals        TEXT NOT NULL,
    before      TEXT,
    PRIMARY KEY (job_id, seq)
);
CREATE INDEX ig_job_rows_action ON ig_job_rows (job_id, action, seq);
CREATE INDEX ig_job_rows_nkey ON ig_job_rows (job_id, nkey);
CREATE TABLE ig_job_errors (
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
CREATE TABLE ig_job_changes (
    job_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    row_no      BIGINT NOT NULL,
    op          TEXT NOT NULL,
    nkey        TEXT NOT NULL,
    before      TEXT,
    after       TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
CREATE TABLE ig_job_events (
    job_id      TEXT NOT NULL,
    n           BIGINT NOT NULL,
    at          TEXT NOT NULL,
    event       TEXT NOT NULL,
    from_state  TEXT,
    to_state    TEXT NOT NULL,
    actor       TEXT,
    comment     TEXT,
    detail      TEXT,
    seq         BIGINT NOT NULL UNIQUE,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (job_id, n)
);
