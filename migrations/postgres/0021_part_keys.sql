-- Workbooks (API.md section 16): SQLite keeps the key values of an earlier
-- part's valid rows that a later part's references name in ig_part_keys
-- (its 0021). PostgreSQL hashes the earlier part's stage in each lookup
-- statement as fast as it would keep them, so it has no such table; this
-- step keeps the two backends' step numbers the same.
SELECT 1;
