-- Console sign-in with the company's identity provider (API.md section
-- 17). A sign-in under way between the redirect to the provider and its
-- return: the SHA-256 of its `state` (the browser holds the state in a
-- cookie too), the nonce the ID token must carry, the PKCE verifier and
-- the console page to go back to. Used once: the return deletes it.
CREATE TABLE ig_oidc_logins (
    state_hash VARCHAR(191) NOT NULL PRIMARY KEY,
    nonce LONGTEXT NOT NULL,
    verifier LONGTEXT NOT NULL,
    next LONGTEXT NOT NULL,
    created_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- A person the provider signed in: its subject, the person it is, and the
-- key that stands for their sign-ins (its role and modules follow the
-- groups of the latest sign-in; it has no usable secret). The key holds
-- the issuer's URL (up to 512 characters) and the subject (at most 255
-- ASCII characters in OpenID Connect).
CREATE TABLE ig_oidc_links (
    issuer VARCHAR(512) NOT NULL,
    sub VARCHAR(255) NOT NULL,
    person_id LONGTEXT NOT NULL,
    key_id LONGTEXT NOT NULL,
    PRIMARY KEY (issuer, sub)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
