# A module's data: its rows, its last imports, the export.
nav-data = Data
data-index-title = Data
data-loop-help = To change existing rows: export them, edit the file in a spreadsheet, then upload it with mode upsert. Each row's _version tells importgate which rows changed in the table since the export; those are refused as conflicts instead of overwritten.
data-rules-link = Rules
data-row-count = { $count ->
    [one] The table holds one row.
   *[other] The table holds { $count } rows.
}
data-export-title = Export
data-format = Format
data-filters = Only rows where
data-filter-any = any value
data-limit = At most this many rows
data-export = Export
data-imports-title = Last imports
data-imports-none = No imports of this module yet.
