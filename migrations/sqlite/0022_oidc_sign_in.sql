-- Console sign-in with the company's identity provider (API.md section
-- 17). A sign-in under way between the redirect to the provider and its
-- return: the SHA-256 of its `state` (the browser holds the state in a
-- cookie too), the nonce the ID token must carry, the PKCE verifier and
-- the console page to go back to. Used once: the return deletes it.
CREATE TABLE ig_oidc_logins (
    state_hash TEXT PRIMARY KEY,
    nonce TEXT NOT NULL,
    verifier TEXT NOT NULL,
    next TEXT NOT NULL,
    created_at TEXT NOT NULL
);
-- A person the provider signed in: its subject, the person it is, and the
-- key that stands for their sign-ins (its role and modules follow the
-- groups of the latest sign-in; it has no usable secret).
CREATE TABLE ig_oidc_links (
    issuer TEXT NOT NULL,
    sub TEXT NOT NULL,
    person_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    PRIMARY KEY (issuer, sub)
);
