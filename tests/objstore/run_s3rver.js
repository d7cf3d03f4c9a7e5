// Starts s3rver 3.7.1 (package.json) on 127.0.0.1 at a port the OS picks,
// with bucket BUCKET pre-created and its data in DIR, and prints
// "PORT <n>" once it listens. Its key pair is the hard-coded S3RVER /
// S3RVER; mismatched signatures are refused (the default: it checks the
// request's shape, not the SigV4 value, see docs/stores.md).
// Usage: node run_s3rver.js DIR BUCKET
'use strict';
const S3rver = require('s3rver');

const [dir, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: dir,
  configureBuckets: [{ name: bucket, configs: [] }],
});
server.run().then(({ port }) => {
  process.stdout.write(`PORT ${port}\n`);
}).catch((err) => {
  process.stderr.write(`s3rver: ${err}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
