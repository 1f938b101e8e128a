-- The delivery claim reads pending deliveries only: indexes over
-- them alone stay small however many were delivered, where the
-- claim's scan of the whole-table indexes grew with the log.
DROP INDEX ig_webhook_deliveries_due;
DROP INDEX ig_webhook_deliveries_order;
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (webhook_id, subject, seq) WHERE state = 'pending';
