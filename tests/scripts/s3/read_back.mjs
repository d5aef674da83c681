// Reads every object under a prefix back with the AWS SDK (@aws-sdk/client-s3), through the
// verifying proxy, into OUT_DIR (one file per object, named by its index in the listing), and
// prints one JSON line per object: key, file, size, content type and encoding, metadata.
// Usage: node read_back.mjs ENDPOINT BUCKET PREFIX OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { S3Client, ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';

const [endpoint, bucket, prefix, outDir] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
                          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
let token, n = 0;
do {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
  for (const o of page.Contents || []) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
    const file = path.join(outDir, `object${n++}.bin.gz`);
    fs.writeFileSync(file, Buffer.from(await got.Body.transformToByteArray()));
    console.log(JSON.stringify({ key: o.Key, file, size: o.Size, contentType: got.ContentType,
                                 contentEncoding: got.ContentEncoding, metadata: got.Metadata }));
  }
  token = page.NextContinuationToken;
} while (token);
