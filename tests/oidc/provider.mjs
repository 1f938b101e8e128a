// Test OpenID Connect provider for importgate's test suite (see README.md).
//
//   OIDC_PORT=0 OIDC_REDIRECT_URIS=http://127.0.0.1:8080/auth/callback node tests/oidc/provider.mjs
//
// Prints one line on stdout, `ready http://127.0.0.1:PORT`, once listening.
// Everything else (oidc-provider notices included) goes to stderr.
import * as http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

console.log = console.info = console.error;

const PORT = Number(process.env.OIDC_PORT);
const REDIRECT_URIS = (process.env.OIDC_REDIRECT_URIS ?? '')
  .split(',').map((s) => s.trim()).filter(Boolean);
if (!process.env.OIDC_PORT || !Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
  console.error('OIDC_PORT must be a port number (0 picks a free one)');
  process.exit(2);
}
if (REDIRECT_URIS.length === 0) {
  console.error('OIDC_REDIRECT_URIS must list at least one redirect URI');
  process.exit(2);
}

const KID = 'importgate-test-rs256';
const SCOPES = ['openid', 'email', 'profile', 'groups'];
const MODES = ['normal', 'wrong_aud', 'expired', 'bad_signature', 'wrong_nonce', 'big_token'];
const COOKIE = { session: 'op_session', interaction: 'op_interaction', resume: 'op_interaction_resume' };

const USERS = {
  'sub-budi': { name: 'Budi Santoso', email: 'budi@example.co.id', email_verified: true, groups: ['staff'] },
  'sub-siti': { name: 'Siti Rahayu', email: 'siti@example.co.id', email_verified: true, groups: ['finance-approvers'] },
  'sub-dewi': { name: 'Dewi Anggraini', email: 'dewi@example.co.id', email_verified: true, groups: ['ops-admins'] },
  'sub-eko': { name: 'Eko Prasetyo', email: 'eko@example.co.id', email_verified: false, groups: ['staff'] },
  'sub-rina': { name: 'Rina Wati', email: 'rina@example.co.id', email_verified: true, groups: ['marketing'] },
};

// The published signing key, and a key with the same kid that is never published.
const signing = await generateKeyPair('RS256', { extractable: true });
const untrusted = await generateKeyPair('RS256');
const signingJwk = { ...(await exportJWK(signing.privateKey)), kid: KID, alg: 'RS256', use: 'sig' };

// What the next authorization / token response does; set by POST /_test/next.
const next = { user: null, mode: 'normal' };
let slowMs = 0;

// The server listens first so that OIDC_PORT=0 can pick a free port before the issuer is fixed.
const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(PORT, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const client = (client_id, client_secret) => ({
  client_id,
  client_secret,
  redirect_uris: REDIRECT_URIS,
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_basic',
});

const provider = new Provider(issuer, {
  clients: [client('importgate', 'importgate-secret'), client('other-app', 'other-secret')],
  jwks: { keys: [signingJwk] },
  scopes: SCOPES,
  claims: {
    openid: ['sub', 'groups'], // groups is released with every openid request
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  // Scope-released claims go into the ID token as well as userinfo.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { names: COOKIE },
  async findAccount(ctx, sub) {
    const user = USERS[sub];
    return user && { accountId: sub, claims: async () => ({ sub, ...user }) };
  },
  // No consent screen: every signed-in user has granted every scope to every client.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(SCOPES.join(' '));
    await grant.save();
    return grant;
  },
  ttl: {
    AccessToken: 600,
    AuthorizationCode: 300,
    ClientCredentials: 600,
    DeviceCode: 600,
    BackchannelAuthenticationRequest: 600,
    IdToken: 600,
    Interaction: 600,
    PreAuthorizedCode: 600,
    RefreshToken: 600,
    Session: 600,
    Grant: 600,
  },
  clientBasedCORS: () => false,
  renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Error', `<pre id="error">${escape(JSON.stringify(out, null, 2))}</pre>`);
  },
});

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req.iterator({ destroyOnReturn: false })) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title, body) => `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body><h1>${escape(title)}</h1>${body}</body></html>`;

function loginPage(uid, error) {
  return page('Test OIDC sign-in', `
${error ? `<p id="error">${escape(error)}</p>` : ''}
<form id="login-form" method="post" action="/interaction/${escape(uid)}/login">
  <label>User <input id="login" name="login" type="text" autocomplete="off" autofocus></label>
  <label>Password <input id="password" name="password" type="password"></label>
  <button id="submit" type="submit">Sign in</button>
</form>
<form method="post" action="/interaction/${escape(uid)}/abort">
  <button id="cancel" type="submit">Cancel</button>
</form>
<p>Users: ${Object.keys(USERS).map(escape).join(', ')} (any password).</p>`);
}

function setSessionCookie(req, value) {
  const kept = (req.headers.cookie ?? '').split(';').map((c) => c.trim())
    .filter((c) => c && !c.startsWith(`${COOKIE.session}=`));
  if (value) kept.push(`${COOKIE.session}=${value}`);
  if (kept.length) req.headers.cookie = kept.join('; ');
  else delete req.headers.cookie;
}

async function rewriteIdToken(jwt, mode) {
  const header = decodeProtectedHeader(jwt);
  const claims = decodeJwt(jwt);
  const now = Math.floor(Date.now() / 1000);
  let key = signing.privateKey;
  switch (mode) {
    case 'wrong_aud': claims.aud = 'other-app'; break;
    case 'expired': claims.iat = now - 20 * 60; claims.exp = now - 10 * 60; break;
    case 'bad_signature': key = untrusted.privateKey; break;
    case 'wrong_nonce': claims.nonce = 'not-the-nonce-that-was-sent'; break;
    case 'big_token': claims.padding = 'x'.repeat(17 * 1024); break;
  }
  return new SignJWT(claims).setProtectedHeader(header).sign(key);
}

// Test control: POST /_test/next, /_test/reset, /_test/slow.
provider.use(async (ctx, nextMw) => {
  if (!ctx.path.startsWith('/_test/')) return nextMw();
  if (ctx.method !== 'POST') ctx.throw(405);
  const text = await readBody(ctx.req);
  let body;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    ctx.throw(400, 'body must be JSON');
  }
  switch (ctx.path) {
    case '/_test/next': {
      const { user = null, mode = 'normal' } = body;
      if (user !== null && !Object.hasOwn(USERS, user)) ctx.throw(400, `unknown user ${user}`);
      if (!MODES.includes(mode)) ctx.throw(400, `mode must be one of ${MODES.join(', ')}`);
      Object.assign(next, { user, mode });
      break;
    }
    case '/_test/reset':
      Object.assign(next, { user: null, mode: 'normal' });
      slowMs = 0;
      break;
    case '/_test/slow': {
      const ms = Number(body.ms);
      if (!Number.isInteger(ms) || ms < 0) ctx.throw(400, 'ms must be a non-negative integer');
      slowMs = ms;
      break;
    }
    default:
      ctx.throw(404);
  }
  ctx.body = { ...next, slow_ms: slowMs };
});

// Discovery and JWKS answer late while /_test/slow is set.
provider.use(async (ctx, nextMw) => {
  if (slowMs > 0 && (ctx.path === '/.well-known/openid-configuration' || ctx.path === '/jwks')) {
    await sleep(slowMs);
  }
  return nextMw();
});

// Every authorization request starts signed out (no single sign-on), so each
// browser sign-in shows the login form. A preset user is instead signed in
// by a fresh session, and /auth redirects straight back with a code.
provider.use(async (ctx, nextMw) => {
  if (ctx.path === '/auth' || ctx.path.startsWith('/auth/')) {
    let sessionId = null;
    if (ctx.path === '/auth' && next.user) {
      const session = new provider.Session();
      session.loginAccount({ accountId: next.user });
      await session.save(600);
      sessionId = session.id;
      next.user = null;
    }
    setSessionCookie(ctx.req, sessionId);
  }
  return nextMw();
});

// Login page: GET /interaction/:uid, POST /interaction/:uid/login and /abort.
provider.use(async (ctx, nextMw) => {
  const m = ctx.path.match(/^\/interaction\/([^/]+)(?:\/(login|abort))?$/);
  if (!m) return nextMw();
  const [, uid, action] = m;
  ctx.set('cache-control', 'no-store');
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== uid) ctx.throw(400, 'interaction mismatch');

  if (!action && ctx.method === 'GET') {
    if (details.prompt.name !== 'login') ctx.throw(501, `unexpected prompt ${details.prompt.name}`);
    ctx.type = 'html';
    ctx.body = loginPage(uid);
    return;
  }
  if (ctx.method !== 'POST') ctx.throw(405);

  let result;
  if (action === 'abort') {
    result = { error: 'access_denied', error_description: 'End-User aborted interaction' };
  } else {
    const login = new URLSearchParams(await readBody(ctx.req)).get('login')?.trim() ?? '';
    if (!Object.hasOwn(USERS, login)) {
      ctx.type = 'html';
      ctx.body = loginPage(uid, `Unknown user "${login}"`);
      return;
    }
    result = { login: { accountId: login } };
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, {
    mergeWithLastSubmission: false,
  });
  ctx.status = 303;
  ctx.redirect(returnTo);
});

// Token endpoint: client_secret_post is accepted by moving the credentials into
// a Basic header (the clients are registered for client_secret_basic), and the
// ID token is rewritten according to the pending mode.
provider.use(async (ctx, nextMw) => {
  if (ctx.path !== '/token' || ctx.method !== 'POST') return nextMw();
  if (!ctx.get('authorization') && ctx.is('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(await readBody(ctx.req));
    if (form.has('client_id') && form.has('client_secret')) {
      const basic = `${encodeURIComponent(form.get('client_id'))}:${encodeURIComponent(form.get('client_secret'))}`;
      ctx.req.headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
      form.delete('client_id');
      form.delete('client_secret');
    }
    ctx.request.body = Object.fromEntries(form);
  }
  await nextMw();
  if (next.mode === 'normal' || ctx.status !== 200 || typeof ctx.body?.id_token !== 'string') return;
  ctx.body.id_token = await rewriteIdToken(ctx.body.id_token, next.mode);
  next.mode = 'normal';
});

server.on('request', provider.callback());
process.stdout.write(`ready ${issuer}\n`);

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
