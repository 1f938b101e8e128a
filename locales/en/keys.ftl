# Key management and key requests, for admins (src/console/keys.rs).
keys-title = Keys
keys-new-key-for = New key for { $person } ({ $role })
keys-new-key-copy-now = Copy it now: it is shown only this once.
keys-new-key-hash-only = The service keeps only a hash.
keys-new-key-label = The new key
keys-copy = Copy
keys-revoked = The key is revoked.

keys-create-title = Create a key
keys-field-name = Name (person or system)
keys-field-email = Email (optional)
keys-field-person = Person
keys-person-new = A new person
keys-person-same = Another key for { $name } ({ $id })
keys-field-expires = Expires (optional)
keys-create = Create key

keys-requests-title = Key requests
keys-requests-pending = { $n_text } pending
keys-no-requests = No requests yet. Staff ask for keys in the { $link }.
keys-developer-center = developer center
keys-col-request = Request
keys-col-person = Person
keys-col-email = Email
keys-col-reason = Reason
keys-col-state = State
keys-col-decide = Decide
keys-decided-by = by { $person }
keys-withdraw-open = Withdraw…
keys-withdraw-confirm = Withdraw this approval? The key has not been collected; it never will be.
keys-withdraw = Withdraw approval
keys-approve-open = Approve…
keys-deny-open = Deny…
keys-comment = Comment (optional)
keys-approve = Approve: let them collect a { $role } key
keys-deny = Deny request
keys-deny-address-open = Deny all from this address…
keys-deny-address-confirm = Deny every pending request from { $address } (within your modules)? Each is recorded as your decision.
keys-deny-address = Deny all from this address
keys-from-address = from { $address }

keys-all-title = All keys
keys-col-key = Key
keys-col-created = Created
keys-col-expires = Expires
keys-col-status = Status
keys-col-revoke = Revoke
keys-never = never
keys-revoke-open = Revoke…
keys-revoke-confirm = Revoke { $person }'s key? It stops working at once, in every session.
keys-revoke = Revoke key
keys-yours = your key

# A key's status.
keys-status-live = live
keys-status-expired = expired
keys-status-revoked = revoked

# A key request's state.
keys-request-pending = pending
keys-request-approved = approved
keys-request-denied = denied
keys-request-collected = collected
keys-request-expired = expired
keys-request-withdrawn = withdrawn
