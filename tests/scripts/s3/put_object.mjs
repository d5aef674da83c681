// Stores FILE under KEY with the AWS SDK (@aws-sdk/client-s3), through the verifying proxy: an
// object as another writer (dial9 itself, in one of its key layouts) would have stored it.
// Usage: node put_object.mjs ENDPOINT BUCKET KEY FILE
import fs from 'node:fs';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { loopbackClient } from './loopback_s3.mjs';

const [endpoint, bucket, key, file] = process.argv.slice(2);
const s3 = loopbackClient(endpoint);
await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: fs.readFileSync(file),
                                     ContentType: 'application/octet-stream', ContentEncoding: 'gzip' }));
