// A tiny static file server for the viewer and its browser tests: serves the repository root on
// 127.0.0.1 (a free port unless PORT is set) and the shared fixtures under /shared/.
//   node tools/serve.mjs            → prints the viewer URL
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
export const sharedDir = process.env.D9_SHARED_DIR || path.resolve(repoRoot, '..', 'shared');

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.md': 'text/plain; charset=utf-8',
};

function resolve(urlPath) {
  let p = decodeURIComponent(urlPath.split('?')[0]);
  let root = repoRoot;
  if (p.startsWith('/shared/')) {
    root = sharedDir;
    p = p.slice('/shared'.length);
  }
  const full = path.resolve(root, '.' + p);
  if (full !== root && !full.startsWith(root + path.sep)) return null; // no escaping the root
  return full;
}

export function startServer(port = 0) {
  const server = http.createServer((req, res) => {
    let file = resolve(req.url || '/');
    if (file && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok({ server, port: server.address().port })));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { port } = await startServer(Number(process.env.PORT || 0));
  console.log(`dial9 viewer: http://127.0.0.1:${port}/viewer/index.html`);
  console.log(`with the fixture: http://127.0.0.1:${port}/viewer/index.html?trace=/shared/fixtures/dial9-demo-trace.bin`);
}
