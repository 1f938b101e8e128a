# The page shell and what every page shares (src/console/layout.rs, mod.rs).
sim-banner-title = Simulation — nothing is written.
sim-banner-text = Imports pass the gate and are recorded in the ledger, but no module table is changed.
skip-to-content = Skip to content
nav-main = Main
lang-switch = Language
nav-jobs = Jobs
nav-upload = Upload
nav-keys = Keys
nav-developers = Developers
sign-in = Sign in
sign-out = Sign out
footer = importgate — every import waits for a second person at the Human-Gate.
error-status = Status { $status }
error-code = code
back-to-jobs = Back to the jobs
field-role = Role
field-role-help = A submitter uploads and follows jobs; an approver also decides at the gate; an admin also manages keys.
field-modules = Modules
field-modules-help = * for all, or module keys separated by commas (customers, orders).
size-bytes = { $n ->
    [one] { $n_text } byte
   *[other] { $n_text } bytes
}
rows-count = { $n ->
    [one] { $n_text } row
   *[other] { $n_text } rows
}
empty-value = empty
value-true = yes
value-false = no

role-submitter = submitter
role-approver = approver
role-admin = admin

state-validating = Validating
state-invalid = Invalid file
state-failed = Failed
state-awaiting_approval = Awaiting approval
state-committing = Committing
state-committed = Committed
state-rejected = Rejected
state-cancelled = Cancelled
state-expired = Expired
state-rollback_pending = Rollback pending
state-rolling_back = Rolling back
state-rolled_back = Rolled back

# Problems as a person reads them (src/console/mod.rs).
problem-unknown_module = Unknown module
problem-not_found = Not found
problem-unauthorized = Sign in again
problem-forbidden = Not allowed for this key
problem-self_approval = Four-eyes rule
problem-invalid_state = Not possible in this state
problem-stale = The job changed since you looked at it
problem-invalid = Invalid parameter
problem-bad_request = Bad request
problem-unsupported_type = Unsupported file type
problem-empty = Empty file
problem-idempotency = Idempotency key reused
problem-too_large = File too large
problem-collected = The key was already collected
problem-too_many = Too many requests
problem-closed = The request is closed
problem-rollback_expired = The rollback window closed
problem-purged = The rows and file were purged
problem-revised = The rows went to the revision
problem-internal = Internal error
problem-internal-detail = the service failed; the error is logged
problem-page-not-found = Page not found
problem-page-not-found-detail = there is no page at { $path }
problem-csrf = The form expired
problem-csrf-detail = the form's security token does not match your session; reload the page and try again
problem-cross-site = Cross-site request refused
problem-cross-site-detail = the console accepts changes only from its own pages
problem-session-ended = your console session ended; sign in again
problem-detail-with-exact = { $summary } ({ $exact })
problem-unknown_module-detail = “{ $module }” is not a module.
problem-not_found-detail = There is no { $what } { $id }, or this key may not see it.
problem-unauthorized-detail = The key is unknown, revoked or expired.
problem-forbidden-detail = This key's role or modules do not allow it.
problem-self_approval-detail = The key that asked for this gate action may not decide it; another approver must.
problem-invalid_state-detail = It is { $state } now, and this is not possible from there.
problem-stale-detail = Someone moved the job since this page was loaded; reload it and decide again.
problem-invalid-detail = The value of { $parameter } cannot be used.
problem-bad_request-detail = The request cannot be read.
problem-unsupported_type-detail = { $content_type } is not a file format importgate reads: send CSV, XLSX, XLS, ODS, JSON or NDJSON.
problem-empty-detail = The request has no file.
problem-idempotency-detail = This Idempotency-Key was used for a different upload in the last 24 hours; use a new key.
problem-too_large-detail = The file is larger than the limit of { $limit }.
problem-collected-detail = The key of { $id } was handed out once and is not kept; ask an admin to revoke it if it was not you.
problem-too_many-detail = Wait { $seconds_text } seconds and try again.
problem-closed-detail = This request can no longer be used.
problem-rollback_expired-detail = The rollback window of this job closed at { $closed }; it can no longer be rolled back.
problem-revised-detail = This job was revised as { $to }, and its rows went with the revision: look at { $to } for the preview. This job, its timeline and its error list remain.
problem-purged-detail = The staged rows and stored file of this job were purged at { $at }, so its preview is gone; the job, its timeline and its error list remain.

# The console's script (src/console/assets/console.js).
js-copied = Copied
js-job-now = { $job } is now { $state }
js-job-changed = This job changed meanwhile: it is now { $state }.
js-checking = Checking the rows…
js-checked = { $state }: { $rows } rows checked
js-choose-file = Choose a file first.
js-upload-failed-status = The upload failed (HTTP { $status }).
js-upload-unreachable = The upload failed: the service could not be reached.
js-uploading = Uploading…
js-uploading-percent = Uploading… { $percent }%
problem-slow = The file arrived too slowly
problem-slow-detail = The upload was too slow or stopped; nothing was kept. Try again on a steadier connection.
problem-unavailable = The database cannot take this now
problem-unavailable-detail = The database is busy, read-only or out of reach; nothing was changed. Try again in a moment.
