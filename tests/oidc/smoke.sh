#!/usr/bin/env bash
# Proves the test OIDC provider works without the Rust suite:
#   bash tests/oidc/smoke.sh
# Exits non-zero on the first failure.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"
[ -d node_modules/oidc-provider ] || npm ci --prefix "$HERE" --no-audit --no-fund

REDIRECT=http://127.0.0.1:9/cb
WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; [ -s "$WORK/stderr" ] && sed 's/^/provider: /' "$WORK/stderr" >&2; exit 1; }

OIDC_PORT=0 OIDC_REDIRECT_URIS="$REDIRECT" node provider.mjs >"$WORK/stdout" 2>"$WORK/stderr" &
PID=$!
for _ in $(seq 100); do
  grep -q '^ready ' "$WORK/stdout" 2>/dev/null && break
  kill -0 "$PID" 2>/dev/null || fail "provider exited"
  sleep 0.1
done
ISS=$(sed -n 's/^ready //p' "$WORK/stdout")
[ -n "$ISS" ] || fail "no ready line"
[ "$(wc -l <"$WORK/stdout")" -eq 1 ] || fail "stdout has more than the ready line"
echo "provider ready at $ISS"

# Runs the ES module source $1 (jose importable); its arguments are process.argv[2...].
js() { local src=$1; shift; node --input-type=module -e "$src" -- js "$@"; }
json() { js 'let s="";for await (const c of process.stdin) s+=c;const v=JSON.parse(s)[process.argv[2]];console.log(typeof v==="string"?v:JSON.stringify(v))' "$1"; }
query() { js 'console.log(new URL(process.argv[2]).searchParams.get(process.argv[3]) ?? "")' "$1" "$2"; }
rand() { js 'console.log((await import("node:crypto")).randomBytes(16).toString("base64url"))'; }
# curl with the cookie jar, not following redirects; sets STATUS and LOCATION.
hop() { read -r STATUS LOCATION <<<"$(curl -s -c "$WORK/cookies" -b "$WORK/cookies" -o "$WORK/body" -w '%{http_code} %{redirect_url}' "$@")"; }
control() { curl -sf -X POST -H 'content-type: application/json' -d "$2" "$ISS/_test/$1" >/dev/null || fail "POST /_test/$1 $2"; }

curl -sf "$ISS/.well-known/openid-configuration" >"$WORK/discovery" || fail "discovery"
AUTH=$(json authorization_endpoint <"$WORK/discovery")
TOKEN=$(json token_endpoint <"$WORK/discovery")
JWKS=$(json jwks_uri <"$WORK/discovery")
[ "$(json issuer <"$WORK/discovery")" = "$ISS" ] || fail "issuer mismatch"
echo "discovery ok: auth=$AUTH token=$TOKEN jwks=$JWKS"

# Starts an authorization request (PKCE S256, state, nonce); sets VERIFIER STATE NONCE,
# and STATUS LOCATION without following the redirect.
authorize() {
  local client=$1
  VERIFIER=$(rand)$(rand)
  STATE=$(rand)
  NONCE=$(rand)
  local challenge
  challenge=$(js 'console.log((await import("node:crypto")).createHash("sha256").update(process.argv[2]).digest("base64url"))' "$VERIFIER")
  hop --get "$AUTH" \
    --data-urlencode "client_id=$client" --data-urlencode response_type=code \
    --data-urlencode 'scope=openid email profile groups' --data-urlencode "redirect_uri=$REDIRECT" \
    --data-urlencode "state=$STATE" --data-urlencode "nonce=$NONCE" \
    --data-urlencode "code_challenge=$challenge" --data-urlencode code_challenge_method=S256
}

# Checks a redirect to the client and exchanges its code; sets ID_TOKEN.
# $1: the redirect URL, $2: client, $3: secret, $4: basic|post
redeem() {
  local location=$1 client=$2 secret=$3 method=$4
  case "$location" in "$REDIRECT?"*) ;; *) fail "not redirected to the client: $location" ;; esac
  [ "$(query "$location" state)" = "$STATE" ] || fail "state not echoed"
  [ "$(query "$location" iss)" = "$ISS" ] || fail "iss parameter missing"
  local code auth=()
  code=$(query "$location" code)
  [ -n "$code" ] || fail "no code in $location"
  if [ "$method" = basic ]; then auth=(-u "$client:$secret"); else auth=(--data-urlencode "client_id=$client" --data-urlencode "client_secret=$secret"); fi
  curl -s -o "$WORK/token" -w '%{http_code}' "${auth[@]}" "$TOKEN" \
    --data-urlencode grant_type=authorization_code --data-urlencode "code=$code" \
    --data-urlencode "redirect_uri=$REDIRECT" --data-urlencode "code_verifier=$VERIFIER" >"$WORK/token_status"
  [ "$(cat "$WORK/token_status")" = 200 ] || fail "token endpoint: $(cat "$WORK/token_status") $(cat "$WORK/token")"
  ID_TOKEN=$(json id_token <"$WORK/token")
}

# Prints the ID token's header and claims and whether it verifies against the
# published JWKS (signature, issuer, audience importgate, expiry); then checks
# $1 = expect: ok | aud | exp | signature | nonce.
inspect() {
  js '
    import { createRemoteJWKSet, jwtVerify, decodeJwt, decodeProtectedHeader } from "jose";
    const [expect, token, jwks, iss, nonce] = process.argv.slice(2);
    const c = decodeJwt(token);
    const show = { sub: c.sub, aud: c.aud, email: c.email, email_verified: c.email_verified, name: c.name, groups: c.groups, nonce: c.nonce };
    console.log(`  header ${JSON.stringify(decodeProtectedHeader(token))} size ${token.length} bytes`);
    console.log(`  claims ${JSON.stringify(show)}`);
    console.log(`  nonce ${c.nonce === nonce ? "matches" : "DIFFERS from"} the one sent; exp-now ${c.exp - Math.floor(Date.now() / 1000)}s`);
    let result = "ok";
    try {
      await jwtVerify(token, createRemoteJWKSet(new URL(jwks)), { issuer: iss, audience: "importgate" });
    } catch (e) {
      result = { ERR_JWS_SIGNATURE_VERIFICATION_FAILED: "signature", ERR_JWT_EXPIRED: "exp" }[e.code]
        ?? (e.claim === "aud" ? "aud" : `${e.code}: ${e.message}`);
    }
    if (result === "ok" && c.nonce !== nonce) result = "nonce";
    console.log(`  verification: ${result === "ok" ? "succeeds" : `FAILS (${result})`}`);
    if (result !== expect) { console.error(`expected ${expect}, got ${result}`); process.exit(1); }
  ' "$1" "$ID_TOKEN" "$JWKS" "$ISS" "$NONCE" || fail "ID token check ($1)"
}

# Preset user + mode, plain HTTP client: /auth answers with a redirect to the client.
preset_flow() {
  local mode=$1 expect=$2 method=${3:-basic}
  control next "{\"user\":\"sub-budi\",\"mode\":\"$mode\"}"
  authorize importgate
  [ "$STATUS" = 303 ] || fail "/auth answered $STATUS, expected 303"
  redeem "$LOCATION" importgate importgate-secret "$method"
  echo "mode $mode (client_secret_$method):"
  inspect "$expect"
}

preset_flow normal ok
sub=$(js 'import { decodeJwt } from "jose"; const c = decodeJwt(process.argv[2]); console.log(c.sub, c.aud, c.email, c.email_verified, c.name, c.groups.join("|"))' "$ID_TOKEN")
[ "$sub" = "sub-budi importgate budi@example.co.id true Budi Santoso staff" ] || fail "unexpected claims: $sub"
preset_flow wrong_aud aud
preset_flow bad_signature signature
preset_flow expired exp post
preset_flow wrong_nonce nonce
preset_flow big_token ok
[ "${#ID_TOKEN}" -gt 16384 ] || fail "big_token is only ${#ID_TOKEN} bytes"
preset_flow normal ok   # the mode applied once only

# The other client's tokens carry aud other-app.
control next '{"user":"sub-budi"}'
authorize other-app
redeem "$LOCATION" other-app other-secret basic
echo "client other-app:"
inspect aud

# Browser path: without a preset user /auth leads to the login form.
authorize importgate
[ "$STATUS" = 303 ] || fail "/auth answered $STATUS"
form=$LOCATION
curl -sf -c "$WORK/cookies" -b "$WORK/cookies" "$form" >"$WORK/form" || fail "GET $form"
for id in login password submit; do grep -q "id=\"$id\"" "$WORK/form" || fail "login form lacks id=\"$id\""; done
action=$(sed -n 's/.*<form id="login-form" method="post" action="\([^"]*\)".*/\1/p' "$WORK/form")
echo "login form at $form has #login #password #submit, posts to $action"
hop -d login=nobody -d password=x "$ISS$action"
[ "$STATUS" = 200 ] && grep -q 'id="error"' "$WORK/body" || fail "unknown user not refused"
hop -d login=sub-eko -d password=anything "$ISS$action"
[ "$STATUS" = 303 ] || fail "login POST answered $STATUS"
hop "$LOCATION"
[ "$STATUS" = 303 ] || fail "resume answered $STATUS"
redeem "$LOCATION" importgate importgate-secret basic
echo "login form as sub-eko:"
inspect ok
[ "$(js 'import { decodeJwt } from "jose"; console.log(decodeJwt(process.argv[2]).email_verified)' "$ID_TOKEN")" = false ] || fail "sub-eko must be unverified"

# A second sign-in in the same cookie jar shows the form again (no single sign-on).
authorize importgate
case "$LOCATION" in "$ISS/interaction/"*) echo "second sign-in shows the login form again" ;; *) fail "second sign-in skipped the form: $LOCATION" ;; esac

# Cancel on the login form returns error=access_denied to the client.
form=$LOCATION
hop "$form"
hop -X POST "$form/abort"
hop "$LOCATION"
[ "$(query "$LOCATION" error)" = access_denied ] || fail "cancel gave $LOCATION"
echo "cancel returns error=access_denied"

# Slow discovery and JWKS.
control slow '{"ms":1500}'
t=$(curl -sf -o /dev/null -w '%{time_total}' "$ISS/.well-known/openid-configuration") || fail "slow discovery"
awk -v t="$t" 'BEGIN { exit !(t >= 1.5) }' || fail "discovery answered in ${t}s despite slow=1500"
control reset '{}'
t=$(curl -sf -o /dev/null -w '%{time_total}' "$JWKS") || fail "jwks"
awk -v t="$t" 'BEGIN { exit !(t < 1) }' || fail "jwks still slow after reset (${t}s)"
echo "slow 1500 ms delays discovery; reset ends it"

kill -0 "$PID" || fail "provider died"
echo "smoke: all checks passed"
