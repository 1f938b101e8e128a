-- The client address a key request came from (API.md section 7): at most
-- 3 pending from one address, and an admin denies all pending from one
-- address in one action.
ALTER TABLE ig_key_requests ADD COLUMN client VARCHAR(191);
CREATE INDEX ig_key_requests_client ON ig_key_requests (client, state);
