-- Workbooks (API.md section 16): the key values of an earlier part's valid
-- rows that a later part's references name, as text, kept while the
-- workbook is validated and dropped after, as SQLite keeps them (its
-- 0021): one indexed lookup a value instead of reading the part's stage
-- again in each lookup statement (`key_col` is the referenced column's
-- place in its module). InnoDB stores a table in its primary key's order,
-- as SQLite's WITHOUT ROWID does. `value` takes what the key's 3072 bytes
-- leave after `job` and `key_col`: 765 characters.
CREATE TABLE ig_part_keys (
    job BIGINT NOT NULL,
    key_col INT NOT NULL,
    value VARCHAR(765) NOT NULL,
    PRIMARY KEY (job, key_col, value)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
