# Signing in and the session's refusals (src/console/session.rs).
signin-lead = Sign in with your API key to review and decide imports at the Human-Gate.
signin-key-label = API key
signin-key-help = The key is sent once to start a session; it is not stored in this browser.
signin-no-key = No key yet?
signin-request-key = Request one in the developer center
signin-key-refused = That key is unknown, revoked or expired.
# $class is the budget: uploads or requests.
signin-too-many-detail = this key may make { $limit } { $class ->
    [uploads] uploads
   *[requests] requests
} a minute; try again in { $seconds } s
# Signing in with the company's identity provider (src/console/oidc.rs).
signin-with = Sign in with { $provider }
signin-or-key = Or sign in with an API key
signin-oidc-refused = Sign-in with your company account was refused: { $why }
signin-key-off = Sign-in with an API key is off here; sign in with your company account.
signin-oidc-continue = Signed in. Continue
