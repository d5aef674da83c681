// The test scripts' S3 client (@aws-sdk/client-s3) of the verifying proxy in front of s3rver
// (proxy.mjs): s3rver's keys, path-style addressing; and every object under a prefix, listed
// page by page. Shared by put_object, delete_object, read_back and mirror.
import { S3Client, ListObjectsV2Command } from '@aws-sdk/client-s3';

export function loopbackClient(endpoint) {
  return new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
                        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
}

// Every object under prefix (the listing's Contents entries), in listing order.
export async function listAll(s3, bucket, prefix) {
  const listed = [];
  let token;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    listed.push(...(page.Contents || []));
    token = page.NextContinuationToken;
  } while (token);
  return listed;
}
