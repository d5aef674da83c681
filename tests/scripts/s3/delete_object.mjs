// Deletes KEY with the AWS SDK (@aws-sdk/client-s3), through the verifying proxy: an object gone
// from the bucket after it was listed (a lifecycle rule, another user).
// Usage: node delete_object.mjs ENDPOINT BUCKET KEY
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { loopbackClient } from './loopback_s3.mjs';

const [endpoint, bucket, key] = process.argv.slice(2);
const s3 = loopbackClient(endpoint);
await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
