# The job list and the job page (src/console/jobs.rs, notes.rs).
jobs-title = Jobs
jobs-upload-a-file = Upload a file
jobs-filter-label = Filter jobs
jobs-module = Module
jobs-all-modules = All modules
jobs-state = State
jobs-all-states = All states
jobs-only-mine = Only my uploads
jobs-filter = Filter
jobs-none-match = No jobs match.
jobs-upload-to-start = Upload a file to start one.
jobs-caption = Jobs, newest first. States update by themselves.
jobs-col-job = Job
jobs-col-rows = Rows
jobs-col-errors = Errors
jobs-col-file = File
jobs-col-submitted-by = Submitted by
jobs-col-created = Created
jobs-older = Older jobs →

job-done-approve = Approved. The service carries out the decision now; this page shows the result.
job-done-reject = Rejected. Your reason is recorded in the timeline.
job-done-cancel = Cancelled. Nothing will be written.
job-done-rollback = Rollback requested. Another approver must approve it.
job-reload = Reload the page to see it
job-title = { $module } import { $id }
job-parts = Parts of the workbook
job-part-sheet = sheet { $sheet }
job-heading = { $module } import
job-breadcrumb = Breadcrumb
job-meta-file = File
job-meta-no-name = (no name)
job-meta-into = into
job-meta-mode = mode
job-meta-on-error = on error
job-mode = { $mode ->
    [update] update
    [upsert] upsert
   *[insert] insert
}
job-on-error = { $on_error ->
    [skip] skip
   *[fail] fail
}
job-meta-submitted-by = submitted by
job-simulated = This job runs in simulation: its commit and rollback are recorded but write nothing.
job-revision-of = A revision of
job-revised-as = Revised as
job-purged = The staged rows and stored file of this job were removed on { $when } (retention); its preview is gone, its timeline and error list remain.
job-progress-before = {""}
job-progress-after = {" "}rows checked so far.
job-working-validating = The file is being checked.
job-working-committing = The rows are being written.
job-working-undoing = The import is being undone.
job-counts = Counts

count-rows = Rows
count-valid = Valid
count-errors = Errors
count-insert = Insert
count-update = Update
count-unchanged = Unchanged
count-warnings = Warnings

col-row = Row
col-key = Key
col-why = Why
problem-referring = Rows of other modules that name a key this rollback would delete
col-module = Module
col-names = Names
col-action = Action
col-notes = Row messages

gate-commit-requested-by = Commit requested by
gate-rollback-requested-by = Rollback requested by
gate-by = by
gate-key-issued-by = key issued by
gate-decision = { $action } { $decision }

move-simulated = Simulation: this is recorded, nothing is written.
move-approve = Approve…
move-approve-explain = Approve writing this file into { $table }: { $insert_text } new rows, { $update_text } changed rows, { $unchanged_text } unchanged
move-approve-errors = , { $errors_text } rows with errors left out
move-approve-warnings = , { $warnings_text } rows with warnings (see the Warnings tab)
move-approve-end = . It is written in one transaction exactly as previewed.
move-approve-confirm = Approve and commit
move-approve-rollback = Approve rollback…
move-approve-rollback-explain = Approve undoing this import in { $table }: rows it inserted are deleted, rows it updated get their previous values back.
move-approve-rollback-confirm = Approve rollback
move-reject = Reject…
move-reject-explain = Reject this import. Nothing is written; the submitter sees your reason.
move-reject-confirm = Reject import
move-reject-rollback = Reject rollback…
move-reject-rollback-explain = Keep the import as it is and close the rollback request.
move-reject-rollback-confirm = Reject rollback
move-cancel = Cancel…
move-cancel-explain = Withdraw this import before anyone decides. Nothing is written.
move-cancel-confirm = Cancel import
move-rollback = Request rollback…
move-rollback-explain = Ask for this import to be undone. Another approver must approve the rollback.
move-rollback-confirm = Request rollback

actions-title = Your decision
actions-four-eyes = You asked for this step, so another approver decides it (four-eyes rule).
actions-rollback-closed = The rollback window of this import closed on { $when }; it can no longer be rolled back.
actions-approver-needed = An approver decides this step.
actions-comment-required = Comment (required: say why)
actions-comment-optional = Comment (optional)

tab-all = All
preview-title = Preview
preview-tabs = Rows by action
preview-wait = The preview appears when the file has been checked.
preview-unreadable = The file could not be read, so there is nothing to preview.
preview-no-rows = No rows here.
preview-revised = This job was revised; its rows are shown in the revision.
preview-purged = The staged rows were purged; there is nothing to preview.
preview-rows = Preview rows
preview-pages = Preview pages
preview-range = Rows { $first }–{ $last } of { $total }
preview-was = was
preview-becomes = becomes
pager-first = « First
pager-previous = ‹ Previous
pager-next = Next ›
pager-last = Last »

action-insert = insert
action-update = update
action-unchanged = unchanged
action-error = error
action-excluded = excluded

event-upload = Uploaded
event-checked = Checked: ready for approval
event-file_failure = File refused
event-row_errors = Rows have errors
event-approve = Approved
event-reject = Rejected
event-cancel = Cancelled
event-expire = Expired without a decision
event-written = Written
event-commit_failed = Commit refused
event-rollback = Rollback requested
event-undone = Undone
event-rollback_conflict = Rollback refused: rows changed
event-gave_up = Stopped: the work kept failing
event-interrupted = Interrupted: taken back after a restart
event-purged = Purged: staged rows and stored file removed
event-other = Event
timeline-title = Timeline
timeline-the-service = the service
timeline-to = to

# Row errors and warnings in words (English shows the service's own message).
note-required = { $column } is required
note-type = { $value } is not { $kind }
note-format = { $value } is not in a format of { $kind }
note-format-date = { $value } is not a date ({ $formats })
note-out-of-range = { $value } is out of range for { $column }
note-not-allowed = { $value } is not one of: { $allowed }
note-too-long-max = { $column } is too long: at most { $max_text } characters
note-too-long = { $column } is too long
note-duplicate = the key ({ $key }) appears more than once in this file
note-exists = the key ({ $key }) is already in { $table }
note-not-found = the key ({ $key }) is not in { $table }
note-reference = { $column } { $value } is not in { $module }
note-phone = { $value } is not a phone number
note-conflict = the row of key ({ $key }) changed, was deleted or was added in { $table } since it was exported
type-text = text
type-integer = a whole number
type-numeric = a decimal number
type-boolean = yes or no
type-date = a date
type-timestamp = a date and time
warning-unknown-columns = Columns not in the module are ignored: { $columns }
warning-references = { $rows ->
    [0] Every { $columns } value names a row that is in { $module }
    [one] 1 row names a { $columns } value that is not in { $module }
   *[other] { $rows_text } rows name { $columns } values that are not in { $module }
}
warning-orphans = { $rows ->
    [one] 1 row of { $module } names a row this rollback removes
   *[other] { $rows_text } rows of { $module } name rows this rollback removes
}
warning-sheet-ignored = sheet { $sheet } was left out: it is named after no module
warning-mapping-applied = the saved mapping { $mapping } was applied to the file's headers; upload with ?mapping=none to read them as they are

job-problem-unreadable = The file cannot be read
job-problem-unreadable-detail = The file is not in a format importgate reads, or breaks its limits.
job-problem-encoding = The text is not in the expected encoding
job-problem-encoding-detail = Some bytes are not text in the file's encoding; save it as UTF-8 and upload it again.
job-problem-no_rows = The file has no rows
job-problem-no_rows-detail = The file has a header but no data rows.
job-problem-missing_columns = Required columns are missing
job-problem-missing_columns-detail = Required columns of the module are not in the file's header.
job-problem-duplicate_columns = A column is named twice
job-problem-duplicate_columns-detail = The header names one column twice.
job-problem-unknown_columns = Columns not in the module
job-problem-unknown_columns-detail = The file has columns the module does not know, and the upload asked to refuse them.
job-problem-unknown_sheet = The sheet is not in the workbook
job-problem-unknown_sheet-detail = The sheet the upload named is not in the workbook.
job-problem-no_parts = No sheet holds a module
job-problem-no_parts-detail = No sheet of the workbook is named after a module or mapped to one.
job-problem-too_many_rows = Too many rows
job-problem-too_many_rows-detail = The file has more rows than the limit.
job-problem-too_many_columns = Too many columns
job-problem-too_many_columns-detail = The file has more columns than the limit.
job-problem-row_errors = Rows have errors
job-problem-row_errors-detail = Some rows have errors and the upload asked to stop on errors.
job-problem-stale_preview = The rows changed after the preview
job-problem-stale_preview-detail = Rows in the table changed after the preview; nothing was written.
job-problem-stale_rules = The module's rules changed after the preview
job-problem-stale_rules-detail = The module's rules changed after the preview; nothing was written. Revise the job to check it again under the rules in force.
job-problem-database_error = The database refused the commit
job-problem-database_error-detail = The database refused the rows; nothing was written.
job-problem-rollback_conflict = Rows changed since the commit
job-problem-rollback_conflict-detail = Rows written by this import changed since; nothing was undone.
job-problem-work_failed = The work kept failing
job-problem-work_failed-detail = The service tried several times and failed the same way each time.
job-problem-no_space = The database ran out of disk space
job-problem-no_space-detail = The service tried several times, waiting longer each time, and the database's disk was full each time. Nothing of this job is kept; upload the file again once an administrator has freed space.

count-excluded = Excluded
preview-fixed-was = file had
event-revised = Revised: a revision took its place
revision-heading = Revision { $number } of
revision-mapping = Mapping in force
revision-mapping-none = The file's headers as they are: no header was mapped by hand.
revision-goes-to = goes to
revision-ignored = ignored
revision-fixes = { $n ->
    [one] 1 fixed cell
   *[other] { $n_text } fixed cells
}
revision-cell = Row { $row }
revision-was-unread = (not read yet)
revision-more = … and { $n_text } more, each marked in the preview.
revision-excluded = { $n ->
    [one] 1 excluded row
   *[other] { $n_text } excluded rows
}
revision-excluded-rows = Row numbers:
revision-excluded-see = see them in the preview
revision-revisers = Earlier revisions by
jobs-rules-waiting = { $count ->
    [one] 1 rule proposal awaits a decision.
   *[other] { $count_text } rule proposals await a decision.
}
jobs-rules-waiting-link = See the proposals
# Cells the module's rules normalized, and the rules a job was validated with.
tab-normalized = Only normalized rows
count-normalized = Normalized
preview-normalized-was = normalized from
note-with-rule = { $note } (rule { $rule })
job-meta-rules-version = Rules version { $version }
jobs-revision-of = revision { $number } of
