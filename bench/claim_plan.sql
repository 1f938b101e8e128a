-- The webhook claim's cached generic plan against a backlog (BENCHMARKS.md,
-- "the delivery claim's cached plan"). On a scratch database:
--   psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE claimtest"
--   psql -h 127.0.0.1 -U postgres -d claimtest -f bench/claim_plan.sql
-- The claim (store::webhooks::claim) is prepared and run seven times over
-- three pending deliveries (PostgreSQL then keeps a generic plan), 10,000
-- pending deliveries are added, and the prepared claim and the same
-- statement planned afresh (plan_cache_mode = force_custom_plan) are timed.
CREATE TABLE ig_webhooks (id TEXT PRIMARY KEY, enabled BOOLEAN NOT NULL);
INSERT INTO ig_webhooks VALUES ('wh1', true);
CREATE TABLE ig_webhook_deliveries (
    id TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, seq BIGINT, subject TEXT NOT NULL, event_type TEXT NOT NULL,
    state TEXT NOT NULL, attempts BIGINT NOT NULL, next_at BIGINT NOT NULL, lease_owner TEXT, lease_until BIGINT, body TEXT, created_at timestamptz NOT NULL);
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq) WHERE state = 'pending';
PREPARE c(text, bigint, bigint, boolean, bigint) AS UPDATE ig_webhook_deliveries SET lease_owner = $1, lease_until = $2
         WHERE state = 'pending' AND (lease_until IS NULL OR lease_until < $3) AND id IN (
SELECT d.id FROM ig_webhook_deliveries d
           JOIN ig_webhooks w ON w.id = d.webhook_id AND w.enabled = $4
           WHERE d.state = 'pending' AND d.next_at <= $3
             AND (d.lease_until IS NULL OR d.lease_until < $3)
             AND NOT EXISTS (SELECT 1 FROM ig_webhook_deliveries e
               WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject
                 AND e.state = 'pending' AND e.seq < d.seq)
           ORDER BY d.next_at, d.id LIMIT $5) RETURNING id;
-- the first rounds, on a nearly empty table
INSERT INTO ig_webhook_deliveries SELECT 'msg_a'||g, 'wh1', g, 'job_'||(g/3), 'job.x', 'pending', 0, g, NULL, NULL, NULL, now() FROM generate_series(1,3) g;
EXECUTE c('o', 10, 100, true, 256); EXECUTE c('o', 10, 100, true, 256); EXECUTE c('o', 10, 100, true, 256);
EXECUTE c('o', 10, 100, true, 256); EXECUTE c('o', 10, 100, true, 256); EXECUTE c('o', 10, 100, true, 256);
EXECUTE c('o', 10, 100, true, 256);
-- a backlog of 10,000 (a receiver down for a while)
INSERT INTO ig_webhook_deliveries SELECT 'msg_'||lpad(g::text,8,'0'), 'wh1', 100+g, 'job_'||(g/3), 'job.x', 'pending', 0, 1000+g, NULL, NULL, NULL, now() FROM generate_series(1,10000) g;
\timing on
BEGIN; EXECUTE c('o', 100000000, 1000000, true, 256) \g /dev/null
ROLLBACK;
\timing off
BEGIN; EXPLAIN EXECUTE c('o', 100000000, 1000000, true, 256); ROLLBACK;
-- the same statement planned afresh each time, as the service runs it
SET plan_cache_mode = force_custom_plan;
\timing on
BEGIN; EXECUTE c('o', 100000000, 1000000, true, 256) \g /dev/null
ROLLBACK;
