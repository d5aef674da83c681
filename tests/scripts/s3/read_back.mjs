// Reads every object under a prefix back with the AWS SDK (@aws-sdk/client-s3), through the
// verifying proxy, into OUT_DIR (one file per object, named by its index in the listing), and
// prints one JSON line per object, in listing order: key, file, size, content type and
// encoding, metadata. A few GETs at a time (each waits mostly on the proxy).
// Usage: node read_back.mjs ENDPOINT BUCKET PREFIX OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { loopbackClient, listAll } from './loopback_s3.mjs';

const [endpoint, bucket, prefix, outDir] = process.argv.slice(2);
const s3 = loopbackClient(endpoint);
const listed = await listAll(s3, bucket, prefix);

const lines = new Array(listed.length);
let next = 0;
async function worker() {
  while (next < listed.length) {
    const n = next++, o = listed[n];
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
    const file = path.join(outDir, `object${n}${o.Key.endsWith('.bin.zst') ? '.bin.zst' : '.bin.gz'}`);
    fs.writeFileSync(file, Buffer.from(await got.Body.transformToByteArray()));
    lines[n] = JSON.stringify({ key: o.Key, file, size: o.Size, contentType: got.ContentType,
                                contentEncoding: got.ContentEncoding, metadata: got.Metadata });
  }
}
await Promise.all(Array.from({ length: 4 }, worker));
for (const l of lines) console.log(l);
