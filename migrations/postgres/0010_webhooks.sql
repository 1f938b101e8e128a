-- Webhooks (API.md section 13): endpoints, the outbox of
-- deliveries written with the ledger's links, and their attempts.
-- An endpoint's signing secret is not stored: it is derived from the
-- ledger's key and `salt`.
CREATE TABLE ig_webhooks (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    modules         TEXT NOT NULL,
    description     TEXT,
    salt            TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    disabled_reason TEXT,
    failing_since   TIMESTAMPTZ,
    created_by      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE TABLE ig_webhook_deliveries (
    id          TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL,
    seq         BIGINT,
    subject     TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempts    BIGINT NOT NULL,
    next_at     BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    body        TEXT,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (state, next_at);
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq);
CREATE INDEX ig_webhook_deliveries_log ON ig_webhook_deliveries (webhook_id, created_at);
CREATE TABLE ig_webhook_attempts (
    delivery_id TEXT NOT NULL,
    n           BIGINT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    status      BIGINT,
    latency_ms  BIGINT NOT NULL,
    error       TEXT,
    answer      TEXT,
    PRIMARY KEY (delivery_id, n)
);
