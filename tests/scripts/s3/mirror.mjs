// Copies every object under PREFIX with the AWS SDK (@aws-sdk/client-s3), through the verifying
// proxy, into OUT_DIR/KEY-without-PREFIX (the tables as a reader of the bucket gets them), and
// prints one line per object, in key order: key, size, ETag, LastModified (what a second fold
// must leave as it is).
// Usage: node mirror.mjs ENDPOINT BUCKET PREFIX OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { S3Client, ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';

const [endpoint, bucket, prefix, outDir] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
                          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
const listed = [];
let token;
do {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
  listed.push(...(page.Contents || []));
  token = page.NextContinuationToken;
} while (token);
listed.sort((a, b) => (a.Key < b.Key ? -1 : a.Key > b.Key ? 1 : 0));
for (const o of listed) {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
  const file = path.join(outDir, o.Key.slice(prefix.length));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.from(await got.Body.transformToByteArray()));
  console.log(`${o.Key} ${o.Size} ${o.ETag} ${new Date(o.LastModified).toISOString()}`);
}
