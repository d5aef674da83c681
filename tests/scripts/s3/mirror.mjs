// Copies every object under PREFIX with the AWS SDK (@aws-sdk/client-s3), through the verifying
// proxy, into OUT_DIR/KEY-without-PREFIX (the tables as a reader of the bucket gets them), and
// prints one line per object, in key order: key, size, ETag, LastModified (what a second fold
// must leave as it is).
// Usage: node mirror.mjs ENDPOINT BUCKET PREFIX OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { loopbackClient, listAll } from './loopback_s3.mjs';

const [endpoint, bucket, prefix, outDir] = process.argv.slice(2);
const s3 = loopbackClient(endpoint);
const listed = await listAll(s3, bucket, prefix);
listed.sort((a, b) => (a.Key < b.Key ? -1 : a.Key > b.Key ? 1 : 0));
for (const o of listed) {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
  const file = path.join(outDir, o.Key.slice(prefix.length));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.from(await got.Body.transformToByteArray()));
  console.log(`${o.Key} ${o.Size} ${o.ETag} ${new Date(o.LastModified).toISOString()}`);
}
