-- Console sessions and key requests.
CREATE TABLE ig_sessions (
    id_hash     VARCHAR(191) NOT NULL PRIMARY KEY,
    key_id      LONGTEXT NOT NULL,
    csrf        LONGTEXT NOT NULL,
    created_at  DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_sessions_expires ON ig_sessions (expires_at);
CREATE TABLE ig_key_requests (
    id           VARCHAR(191) NOT NULL PRIMARY KEY,
    name         LONGTEXT NOT NULL,
    email        LONGTEXT NOT NULL,
    role         LONGTEXT NOT NULL,
    modules      LONGTEXT NOT NULL,
    reason       LONGTEXT NOT NULL,
    claim_hash   LONGTEXT NOT NULL,
    state        VARCHAR(191) NOT NULL,
    created_at   DATETIME(6) NOT NULL,
    decided_at   DATETIME(6),
    decided_by   LONGTEXT,
    comment      LONGTEXT,
    key_id       LONGTEXT,
    collected_at DATETIME(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_key_requests_state ON ig_key_requests (state, id);
