-- Console sessions and key requests.
CREATE TABLE ig_sessions (
    id_hash     TEXT PRIMARY KEY,
    key_id      TEXT NOT NULL,
    csrf        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX ig_sessions_expires ON ig_sessions (expires_at);
CREATE TABLE ig_key_requests (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL,
    role         TEXT NOT NULL,
    modules      TEXT NOT NULL,
    reason       TEXT NOT NULL,
    claim_hash   TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    decided_at   TEXT,
    decided_by   TEXT,
    comment      TEXT,
    key_id       TEXT,
    collected_at TEXT
);
CREATE INDEX ig_key_requests_state ON ig_key_requests (state, id);
