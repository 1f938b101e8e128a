-- Key requests asked by each client address (refused ones too), for
-- the limit of API.md section 7; shared by every replica.
CREATE TABLE ig_request_attempts (
    client      VARCHAR(191) NOT NULL,
    at          DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX ig_request_attempts_client ON ig_request_attempts (client, at);
