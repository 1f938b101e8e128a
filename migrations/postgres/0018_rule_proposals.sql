-- Rule sets (API.md section 14). Every change of a module's rules is a
-- proposal; an approved proposal is its module's rule set at its
-- version. Version 1 of a module is the catalog's and has no row.
CREATE TABLE ig_rule_proposals (
    id               TEXT PRIMARY KEY,
    module           TEXT NOT NULL,
    version          BIGINT NOT NULL,
    rules            TEXT NOT NULL,
    comment          TEXT,
    state            TEXT NOT NULL,
    proposed_by      TEXT NOT NULL,
    proposed_at      TIMESTAMPTZ NOT NULL,
    decided_by       TEXT,
    decided_at       TIMESTAMPTZ,
    decision_comment TEXT
);
-- One rule set a version: two approvals of the same version cannot both
-- be written.
CREATE UNIQUE INDEX ig_rule_sets ON ig_rule_proposals (module, version)
    WHERE state = 'approved';
CREATE INDEX ig_rule_proposals_module ON ig_rule_proposals (module, state);
-- The rule set version a job was validated with.
ALTER TABLE ig_jobs ADD COLUMN rules_version BIGINT;
