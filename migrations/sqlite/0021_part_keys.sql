-- Workbooks (API.md section 16): the key values of an earlier part's valid
-- rows that a later part's references name, as text, kept while the
-- workbook is validated and dropped after. One indexed lookup a value,
-- where reading the part's stage into a temporary index once a statement
-- cost SQLite 42 ms a statement at 100k products (`key_col` is the
-- referenced column's place in its module).
CREATE TABLE ig_part_keys (
    job BIGINT NOT NULL,
    key_col INTEGER NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (job, key_col, value)
) WITHOUT ROWID;
