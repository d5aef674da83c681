// Fakes of the AWS credential services, which cannot run here: EC2 IMDSv2, the container
// credentials endpoint, STS AssumeRoleWithWebIdentity. Each fetch gets new credentials (they
// rotate), valid for LIFETIME seconds (their Expiration), appended as a JSON line
// {accessKeyId, secretAccessKey, sessionToken, expiration (ms)} to ISSUED_FILE, which the
// verifying proxy (proxy.mjs, CREDENTIALS_FILE) reads to accept them until they expire.
//   imds:      PUT /latest/api/token needs X-aws-ec2-metadata-token-ttl-seconds (1..21600);
//              every GET needs a valid X-aws-ec2-metadata-token (IMDSv1 GETs get 401);
//              /latest/meta-data/iam/security-credentials/ names the role, /.../ROLE gives JSON.
//   container: GET /creds needs Authorization: AUTH_TOKEN (else 403); JSON.
//   sts:       POST / with the form Action=AssumeRoleWithWebIdentity, Version=2011-06-15,
//              RoleArn=ROLE_ARN, RoleSessionName, WebIdentityToken=WEB_TOKEN, unsigned; XML.
//              STS_FAIL=CODE answers 403 CODE instead.
// Usage: node fake_aws_creds.mjs MODE ISSUED_FILE LOG_FILE; prints {"port":P} once listening on
// 127.0.0.1. Every request is appended to LOG_FILE as {method, path, status, code}.
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';

const [mode, issuedFile, logFile] = process.argv.slice(2);
const LIFETIME = Number(process.env.LIFETIME || 3600);
const ROLE = 'dial9-test-role';
const imdsTokens = new Map(); // token -> expiry (ms)

function log(entry) { fs.appendFileSync(logFile, JSON.stringify(entry) + '\n'); }

function issue() {
  const expiration = Math.floor(Date.now() / 1000 + LIFETIME) * 1000; // whole seconds, as AWS gives
  const c = { accessKeyId: 'ASIA' + crypto.randomBytes(8).toString('hex').toUpperCase(),
              secretAccessKey: crypto.randomBytes(30).toString('base64'),
              sessionToken: 'IQoJb3JpZ2lu' + crypto.randomBytes(180).toString('base64'), expiration };
  fs.appendFileSync(issuedFile, JSON.stringify(c) + '\n');
  return { ...c, iso: new Date(expiration).toISOString().replace(/\.\d{3}Z$/, 'Z') };
}

function answer(req, res, status, type, body, code) {
  log({ method: req.method, path: req.url, status, code });
  res.writeHead(status, { 'content-type': type });
  res.end(body);
}

function imds(req, res) {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'PUT' && url.pathname === '/latest/api/token') {
    const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600 || req.headers['x-forwarded-for'])
      return answer(req, res, 400, 'text/plain', 'Bad Request', 'bad-ttl');
    const token = crypto.randomBytes(32).toString('base64');
    imdsTokens.set(token, Date.now() + ttl * 1000);
    return answer(req, res, 200, 'text/plain', token, 'token');
  }
  if (req.method !== 'GET') return answer(req, res, 405, 'text/plain', 'Method Not Allowed', 'method');
  const token = req.headers['x-aws-ec2-metadata-token'];
  if (!token || !(imdsTokens.get(token) > Date.now()))
    return answer(req, res, 401, 'text/plain', 'Unauthorized', 'no-token'); // IMDSv2 required
  const base = '/latest/meta-data/iam/security-credentials/';
  if (url.pathname === base) return answer(req, res, 200, 'text/plain', ROLE, 'role');
  if (url.pathname === base + ROLE) {
    const c = issue();
    return answer(req, res, 200, 'text/plain', JSON.stringify({
      Code: 'Success', LastUpdated: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), Type: 'AWS-HMAC',
      AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken, Expiration: c.iso,
    }, null, 2), 'issued');
  }
  return answer(req, res, 404, 'text/plain', 'Not Found', 'not-found');
}

function container(req, res) {
  const path = '/creds';
  if (req.method !== 'GET' || new URL(req.url, 'http://x').pathname !== path)
    return answer(req, res, 404, 'application/json', '{"code":"NotFound","message":"no such path"}', 'not-found');
  if (req.headers['authorization'] !== process.env.AUTH_TOKEN)
    return answer(req, res, 403, 'application/json',
                  '{"code":"AccessDenied","message":"the authorization token is not valid"}', 'bad-token');
  const c = issue();
  return answer(req, res, 200, 'application/json', JSON.stringify({
    AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken, Expiration: c.iso,
    RoleArn: 'arn:aws:iam::123456789012:role/' + ROLE,
  }), 'issued');
}

function stsError(req, res, status, code, message) {
  answer(req, res, status, 'text/xml', `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">` +
         `<Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error>` +
         `<RequestId>${crypto.randomUUID()}</RequestId></ErrorResponse>`, code);
}

function sts(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const q = new URLSearchParams(Buffer.concat(chunks).toString());
    if (req.method !== 'POST' || q.get('Action') !== 'AssumeRoleWithWebIdentity' || q.get('Version') !== '2011-06-15')
      return stsError(req, res, 400, 'InvalidAction', 'Could not find operation');
    if (req.headers['authorization']) return stsError(req, res, 400, 'InvalidRequest', 'this call is unsigned');
    if (process.env.STS_FAIL)
      return stsError(req, res, 403, process.env.STS_FAIL, 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    if (q.get('RoleArn') !== process.env.ROLE_ARN)
      return stsError(req, res, 403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    if (!/^[\w+=,.@-]{2,64}$/.test(q.get('RoleSessionName') || ''))
      return stsError(req, res, 400, 'ValidationError', 'bad RoleSessionName');
    if (q.get('WebIdentityToken') !== process.env.WEB_TOKEN)
      return stsError(req, res, 400, 'InvalidIdentityToken', 'The web identity token is not valid');
    const c = issue();
    answer(req, res, 200, 'text/xml',
           `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:test:dial9</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>${q.get('RoleArn').replace(':role/', ':assumed-role/').replace('iam', 'sts')}/${q.get('RoleSessionName')}</Arn>
      <AssumedRoleId>AROA0000:${q.get('RoleSessionName')}</AssumedRoleId></AssumedRoleUser>
    <Credentials>
      <SessionToken>${c.sessionToken}</SessionToken>
      <SecretAccessKey>${c.secretAccessKey}</SecretAccessKey>
      <Expiration>${c.iso}</Expiration>
      <AccessKeyId>${c.accessKeyId}</AccessKeyId>
    </Credentials>
    <Audience>sts.amazonaws.com</Audience>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>${crypto.randomUUID()}</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`, 'issued');
  });
}

const handlers = { imds, container, sts };
if (!handlers[mode]) { console.error(`unknown mode ${mode}`); process.exit(2); }
fs.writeFileSync(issuedFile, '', { flag: 'a' });
const server = http.createServer(handlers[mode]);
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.close(); process.exit(0); });
