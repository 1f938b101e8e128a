-- The delivery claim reads pending deliveries only: indexes over
-- them alone stay small however many were delivered, where the
-- claim's scan of the whole-table indexes grew with the log.
-- MySQL has no partial indexes: `state` leads each index instead, so `state = 'pending'` skips the rest.
DROP INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries;
DROP INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries;
CREATE INDEX ig_webhook_deliveries_due ON ig_webhook_deliveries (state, next_at);
CREATE INDEX ig_webhook_deliveries_order ON ig_webhook_deliveries (state, webhook_id, subject, seq);
