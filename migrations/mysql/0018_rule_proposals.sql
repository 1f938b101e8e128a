-- Rule sets (API.md section 14). Every change of a module's rules is a
-- proposal; an approved proposal is its module's rule set at its
-- version. Version 1 of a module is the catalog's and has no row.
-- MySQL has no partial indexes: `approved_module`, a generated column the
-- service never writes, is the module of an approved proposal and NULL
-- for every other, and a unique index lets any number of NULLs be.
CREATE TABLE ig_rule_proposals (
    id               VARCHAR(191) NOT NULL PRIMARY KEY,
    module           VARCHAR(191) NOT NULL,
    version          BIGINT NOT NULL,
    rules            LONGTEXT NOT NULL,
    comment          LONGTEXT,
    state            VARCHAR(191) NOT NULL,
    proposed_by      LONGTEXT NOT NULL,
    proposed_at      DATETIME(6) NOT NULL,
    decided_by       LONGTEXT,
    decided_at       DATETIME(6),
    decision_comment LONGTEXT,
    approved_module  VARCHAR(191) GENERATED ALWAYS AS
        (CASE WHEN state = 'approved' THEN module END) STORED
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- One rule set a version: two approvals of the same version cannot both
-- be written.
CREATE UNIQUE INDEX ig_rule_sets ON ig_rule_proposals (approved_module, version);
CREATE INDEX ig_rule_proposals_module ON ig_rule_proposals (module, state);
-- The rule set version a job was validated with.
ALTER TABLE ig_jobs ADD COLUMN rules_version BIGINT;
