-- Key requests asked by each client address (refused ones too), for
-- the limit of API.md section 7; shared by every replica.
CREATE TABLE ig_request_attempts (
    client      TEXT NOT NULL,
    at          TEXT NOT NULL
);
CREATE INDEX ig_request_attempts_client ON ig_request_attempts (client, at);
