// A real S3-speaking store (s3rver) behind a proxy that checks every request as S3 would:
// the SigV4 signature is recomputed with the AWS SDK's own signer (@smithy/signature-v4) and
// compared; x-amz-content-sha256 and x-amz-checksum-sha256 must match the body. Any
// difference gets S3's error answer (403 SignatureDoesNotMatch, 400 XAmzContentSHA256Mismatch,
// 400 BadDigest) and is not stored. Faults for tests, by count (never by time):
//   FAULT_RESET=N     the first N PUTs: the connection is destroyed mid-upload
//   FAULT_SLOWDOWN=N  the next N PUTs: 503 SlowDown
//   FAULT_PART_FAIL=N the first N multipart part PUTs: 500 InternalError (after the body)
//   FAULT_STALL=N     the first N PUTs: headers accepted, then the body is never read and no
//                     answer comes (the connection stays open until the client gives up)
//   FAULT_DOWN=1      every request: 503 ServiceUnavailable (S3 down, for the circuit breaker)
//   FAULT_GONE_AFTER_PUTS=N  the first N PUTs go through; every request after them gets no
//                     answer: its connection is closed (the server stopped answering midway)
//   LISTEN_LATER=ADDR also listen on ADDR (another loopback address, 127.0.0.2), same port, but
//                     only once sent SIGUSR2: until then a client of ADDR:PORT gets "connection
//                     refused" (nothing else takes that port there: 127.0.0.1:PORT is ours)
// Multipart uploads are checked as S3 does: every part but the last at least 5 MiB at
// completion (400 EntityTooSmall). AbortMultipartUpload is answered here, as S3 does (204, its
// parts removed; 404 NoSuchUpload for an upload not in progress): s3rver 3.7.1 has no abort
// (405 MethodNotAllowed), so the client's abort would always fail. Initiations, parts, completions and aborts are logged with
// their uploadId (codes initiated, part, completed, aborted), so a test can tell none is left.
// CREDENTIALS_FILE=F: writes (PUT, POST, DELETE) must be signed with credentials listed in F (JSON
// lines {accessKeyId, secretAccessKey, sessionToken, expiration (ms)}, re-read per request, as
// the fake credential services write them: fake_aws_creds.mjs), the session token sent and the
// request signed before the expiration (else 400 ExpiredToken, like S3); reads may still use the
// test's static key (the SDK reading back). Stored PUTs log the access key they were signed with.
// DELAY_PUT_MS=N: every PUT answered N ms after it is stored (uploads then span at least a known
// time, whatever the load: temporary credentials expire during them).
// Holding object GETs, for a test to act while a download is under way (by request, never by
// time): a POST to /__test/hold-gets (unsigned, this fixture's own) holds every object GET's
// answer from then on (logged as code held when it arrives); a POST to /__test/release-gets
// sends those answers and stops holding.
// Usage: node proxy.mjs DATA_DIR BUCKET LOG_FILE; prints {"port":P} once listening on 127.0.0.1.
// Every PUT's and DELETE's outcome is appended to LOG_FILE as a JSON line {method, key, status, code}.
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import S3rver from 's3rver';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';

const [dataDir, bucket, logFile] = process.argv.slice(2);
const ACCESS = 'S3RVER', SECRET = 'S3RVER', REGION = process.env.REGION || 'us-east-1';
let resets = Number(process.env.FAULT_RESET || 0);
let slowdowns = Number(process.env.FAULT_SLOWDOWN || 0);
let partFails = Number(process.env.FAULT_PART_FAIL || 0);
let stalls = Number(process.env.FAULT_STALL || 0);
const down = process.env.FAULT_DOWN === '1';
let putsBeforeGone = process.env.FAULT_GONE_AFTER_PUTS === undefined ? -1 : Number(process.env.FAULT_GONE_AFTER_PUTS);
const credentialsFile = process.env.CREDENTIALS_FILE;
const putDelay = Number(process.env.DELAY_PUT_MS || 0);
const MIN_PART = 5 * 1024 * 1024;
const partSizes = new Map(); // uploadId -> Map(partNumber -> size)
let holdGets = false;
let heldGets = []; // answers to send on release

const store = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dataDir,
                           configureBuckets: [{ name: bucket }] });
const { port: storePort } = await store.run();

function log(entry) { fs.appendFileSync(logFile, JSON.stringify(entry) + '\n'); }

// s3rver keeps an upload in progress as DATA_DIR/BUCKET/._S3rver_uploads/ID (its parts, key
// and metadata; removed when completed): aborting removes it.
function abortUpload(res, key, uploadId) {
  const dir = `${dataDir}/${bucket}/._S3rver_uploads/${uploadId}`;
  if (!/^[0-9a-f]{32}$/.test(uploadId) || !fs.existsSync(dir)) {
    log({ method: 'DELETE', key, status: 404, code: 'abort-unknown', uploadId });
    return s3error(res, 404, 'NoSuchUpload', 'The specified upload does not exist.');
  }
  fs.rmSync(dir, { recursive: true, force: true });
  partSizes.delete(uploadId);
  log({ method: 'DELETE', key, status: 204, code: 'aborted', uploadId });
  res.writeHead(204);
  res.end();
}

function s3error(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

async function verify(req, body) {
  const auth = req.headers['authorization'] || '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return ['AccessDenied', 'malformed or missing Authorization'];
  const [, access, , region, signedNames, signature] = m;
  let secret = SECRET, issued = null;
  if (credentialsFile && (access !== ACCESS || !['GET', 'HEAD'].includes(req.method))) {
    issued = fs.readFileSync(credentialsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
      .find((c) => c.accessKeyId === access);
    if (!issued) return ['InvalidAccessKeyId', `unknown access key ${access}`];
    if (req.headers['x-amz-security-token'] !== issued.sessionToken)
      return ['InvalidToken', 'The provided token is malformed or otherwise invalid.'];
    secret = issued.secretAccessKey;
  } else if (access !== ACCESS) return ['InvalidAccessKeyId', `unknown access key ${access}`];
  const names = signedNames.split(';');
  for (const required of ['host', 'x-amz-content-sha256', 'x-amz-date'])
    if (!names.includes(required)) return ['AccessDenied', `${required} not signed`];
  const headers = {};
  for (const n of names) {
    if (req.headers[n] === undefined) return ['SignatureDoesNotMatch', `signed header ${n} not sent`];
    headers[n] = req.headers[n];
  }
  const claimed = req.headers['x-amz-content-sha256'];
  if (claimed !== 'UNSIGNED-PAYLOAD') {
    const actual = crypto.createHash('sha256').update(body).digest('hex');
    if (claimed !== actual) return ['XAmzContentSHA256Mismatch', `body hash ${actual}, header ${claimed}`];
  }
  const cks = req.headers['x-amz-checksum-sha256'];
  if (cks !== undefined && cks !== crypto.createHash('sha256').update(body).digest('base64'))
    return ['BadDigest', 'x-amz-checksum-sha256 does not match the body'];
  const url = new URL(req.url, 'http://x');
  const query = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const amzDate = req.headers['x-amz-date'];
  const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T` +
                               `${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  if (issued && signingDate.getTime() >= issued.expiration) return ['ExpiredToken', 'The provided token has expired.'];
  const token = req.headers['x-amz-security-token'];
  const signer = new SignatureV4({
    credentials: { accessKeyId: access, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) },
    region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false,
  });
  const signed = await signer.sign({ method: req.method, protocol: 'http:', hostname: headers.host,
                                     path: url.pathname, query, headers }, { signingDate });
  const expected = /Signature=([0-9a-f]{64})/.exec(signed.headers['authorization'])[1];
  if (expected !== signature)
    return ['SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided'];
  return null;
}

function accessOf(req) { return (/Credential=([^/]+)\//.exec(req.headers['authorization'] || '') || [])[1]; }

function keyOf(req) {
  const path = new URL(req.url, 'http://x').pathname;
  const prefix = `/${bucket}/`;
  return path.startsWith(prefix) ? decodeURIComponent(path.slice(prefix.length)) : path;
}

const proxy = http.createServer((req, res) => {
  if (req.method === 'POST' && ['/__test/hold-gets', '/__test/release-gets'].includes(req.url)) {
    holdGets = req.url === '/__test/hold-gets';
    if (!holdGets) { for (const send of heldGets) send(); heldGets = []; }
    req.resume();
    return req.on('end', () => { res.writeHead(204); res.end(); });
  }
  const q = new URL(req.url, 'http://x').searchParams;
  const uploadId = q.get('uploadId');
  const isPart = req.method === 'PUT' && uploadId !== null;
  if (putsBeforeGone === 0) {
    log({ method: req.method, key: keyOf(req), status: 0, code: 'gone' });
    return req.socket.destroy();
  }
  if (req.method === 'PUT' && putsBeforeGone > 0) putsBeforeGone--;
  if (down) {
    log({ method: req.method, key: keyOf(req), status: 503, code: 'down' });
    req.resume();
    return req.on('end', () => s3error(res, 503, 'ServiceUnavailable', 'Service is unable to handle request.'));
  }
  if (req.method === 'PUT' && stalls > 0) {
    stalls--;
    log({ method: 'PUT', key: keyOf(req), status: 0, code: 'stalled' });
    req.pause(); // never read: the client's send buffer fills and it stalls
    return;
  }
  if (req.method === 'PUT' && resets > 0) {
    resets--;
    log({ method: 'PUT', key: keyOf(req), status: 0, code: 'reset' });
    req.socket.destroy();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    if (isPart && partFails > 0) {
      partFails--;
      log({ method: 'PUT', key: keyOf(req), status: 500, code: 'part-failed', uploadId, part: Number(q.get('partNumber')) });
      return s3error(res, 500, 'InternalError', 'We encountered an internal error. Please try again.');
    }
    if (req.method === 'PUT' && slowdowns > 0) {
      slowdowns--;
      log({ method: 'PUT', key: keyOf(req), status: 503, code: 'SlowDown' });
      return s3error(res, 503, 'SlowDown', 'Please reduce your request rate.');
    }
    let bad;
    try { bad = await verify(req, body); } catch (e) { bad = ['AccessDenied', String(e)]; }
    if (bad) {
      const status = bad[0].startsWith('X') || ['BadDigest', 'ExpiredToken'].includes(bad[0]) ? 400 : 403;
      if (req.method === 'PUT') log({ method: 'PUT', key: keyOf(req), status, code: bad[0] });
      return s3error(res, status, bad[0], bad[1]);
    }
    if (req.method === 'POST' && uploadId !== null) { // CompleteMultipartUpload: S3's part minimum
      const sizes = partSizes.get(uploadId) || new Map();
      const listed = [...body.toString().matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
      for (const n of listed.slice(0, -1))
        if ((sizes.get(n) || 0) < MIN_PART) {
          log({ method: 'POST', key: keyOf(req), status: 400, code: 'EntityTooSmall', uploadId });
          return s3error(res, 400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.');
        }
    }
    if (req.method === 'DELETE' && uploadId !== null) return abortUpload(res, keyOf(req), uploadId);
    const upHeaders = { ...req.headers, 'content-length': String(body.length) };
    if (credentialsFile) { // s3rver knows only its own key (it checks no signature): verified here, sent as its key
      upHeaders.authorization = upHeaders.authorization.replace(/Credential=[^/]+\//, `Credential=${ACCESS}/`);
      delete upHeaders['x-amz-security-token'];
    }
    const up = http.request({ host: '127.0.0.1', port: storePort, method: req.method, path: req.url,
                              headers: upHeaders }, (ur) => {
      const answer = [];
      ur.on('data', (c) => answer.push(c));
      ur.on('end', () => {
        const text = Buffer.concat(answer);
        const ok = ur.statusCode >= 200 && ur.statusCode < 300;
        const key = keyOf(req);
        if (isPart) {
          if (ok) {
            if (!partSizes.has(uploadId)) partSizes.set(uploadId, new Map());
            partSizes.get(uploadId).set(Number(q.get('partNumber')), body.length);
          }
          log({ method: 'PUT', key, status: ur.statusCode, code: ok ? 'part' : 'part-error', uploadId,
                part: Number(q.get('partNumber')), size: body.length });
        } else if (req.method === 'PUT') {
          log({ method: 'PUT', key, status: ur.statusCode, code: 'stored', access: accessOf(req) });
        } else if (req.method === 'POST' && q.has('uploads')) {
          const id = (/<UploadId>([^<]*)<\/UploadId>/.exec(text.toString()) || [])[1];
          log({ method: 'POST', key, status: ur.statusCode, code: 'initiated', uploadId: id });
        } else if (req.method === 'POST' && uploadId !== null) {
          log({ method: 'POST', key, status: ur.statusCode, code: ok ? 'completed' : 'complete-error', uploadId });
        } else if (req.method === 'GET') {
          if (q.get('list-type')) log({ method: 'GET', key, status: ur.statusCode, code: 'listed', prefix: q.get('prefix') });
          else log({ method: 'GET', key, status: ur.statusCode, code: 'got' });
        } else if (req.method === 'DELETE') {
          log({ method: 'DELETE', key, status: ur.statusCode, code: ok ? 'deleted' : 'delete-error' });
        }
        const send = () => { res.writeHead(ur.statusCode, ur.headers); res.end(text); };
        if (req.method === 'GET' && !q.get('list-type') && holdGets) {
          log({ method: 'GET', key, status: ur.statusCode, code: 'held' });
          heldGets.push(send);
        } else if (req.method === 'PUT' && putDelay) setTimeout(send, putDelay); else send();
      });
    });
    up.on('error', (e) => s3error(res, 502, 'InternalError', String(e)));
    up.end(body);
  });
});
proxy.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: proxy.address().port }) + '\n');
});
if (process.env.LISTEN_LATER)
  process.on('SIGUSR2', () => {
    const later = http.createServer((req, res) => proxy.emit('request', req, res));
    later.listen(proxy.address().port, process.env.LISTEN_LATER, () => log({ method: '-', key: '', status: 0, code: 'opened' }));
  });
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, async () => { proxy.close(); await store.close(); process.exit(0); });
