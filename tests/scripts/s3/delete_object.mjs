// Deletes KEY with the AWS SDK (@aws-sdk/client-s3), through the verifying proxy: an object gone
// from the bucket after it was listed (a lifecycle rule, another user).
// Usage: node delete_object.mjs ENDPOINT BUCKET KEY
import { S3Client, DeleteObjectCommand } from '@aws-sdk/client-s3';

const [endpoint, bucket, key] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
                          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
