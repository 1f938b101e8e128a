-- Persons (API.md section 1): a key belongs to a person, who may
-- hold several; each key records the key that issued it. Keys made
-- before this are each their own person. The fingerprint of the key
-- the ledger's chain is sealed with (section 9).
ALTER TABLE ig_keys ADD COLUMN person_id VARCHAR(191);
ALTER TABLE ig_keys ADD COLUMN email LONGTEXT;
ALTER TABLE ig_keys ADD COLUMN issued_by LONGTEXT;
UPDATE ig_keys SET person_id = CONCAT('per_', SUBSTRING(id, 5));
CREATE INDEX ig_keys_person ON ig_keys (person_id);
CREATE TABLE ig_ledger_seal (
    fingerprint LONGTEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
