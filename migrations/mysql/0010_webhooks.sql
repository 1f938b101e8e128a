-- Webhooks (API.md section 13): endpoints, the outbox of
-- deliveries written with the ledger's links, and their attempts.
-- An endpoint's signing secret is not stored: it is derived from the
-- ledger's key and `salt`.
CREATE TABLE ig_webhooks (
    id              VARCHAR(191) NOT NULL PRIMARY KEY,
    url             LONGTEXT NOT NULL,
    events          LONGTEXT NOT NULL,
    modules         LONGTEXT NOT NULL,
    description     LONGTEXT,
    salt            LONGTEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    disabled_reason LONGTEXT,
    failing_since   DATETIME(6),
    created_by      LONGTEXT NOT NULL,
    created_at      DATETIME(6) NOT NULL,
    updated_at      DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE ig_webhook_deliveries (
    id          VARCHAR(191) NOT NULL PRIMARY KEY,
    webhook_id  VARCHAR(191) NOT NULL,
    seq         BIGINT,
    subject     VARCHAR(191) NOT NULL,
    event_type  LONGTEXT NOT NULL,
    state       VARCHAR(191) NOT NULL,
    attempts    BIGINT NOT NULL,
    next_at     BIGINT NOT NULL,
    lease_owner LONGTEXT,
    lease_until BIGINT,
    body        LONGTEXT,
    created_at  DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (state, next_at);
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq);
CREATE INDEX ig_webhook_deliveries_log ON ig_webhook_deliveries (webhook_id, created_at);
CREATE TABLE ig_webhook_attempts (
    delivery_id VARCHAR(191) NOT NULL,
    n           BIGINT NOT NULL,
    at          DATETIME(6) NOT NULL,
    status      BIGINT,
    latency_ms  BIGINT NOT NULL,
    error       LONGTEXT,
    answer      LONGTEXT,
    PRIMARY KEY (delivery_id, n)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
