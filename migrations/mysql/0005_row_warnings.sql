-- Row warnings (a reference the referenced table does not hold, with
-- on_missing = "warn"): the other backends kept them in a table of their
-- own at this step, and move them into the stage rows' `warns` at start
-- (`schema::adopt_warnings`). A MySQL database keeps them in the stage
-- rows from the first; the step keeps the backends' numbers alike.
SELECT 1;
