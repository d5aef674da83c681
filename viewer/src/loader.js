/*
 * Getting bytes (files, URLs) and decoding them off the main thread.
 *
 * The Worker is built from the decoder's source text through a Blob URL: module workers,
 * workers from file: URLs and fetch() are all refused when the page is opened from file://
 * in Chromium, while a Blob worker works there and over HTTP alike. If no Worker can be made,
 * decoding runs on the main thread.
 */
(function (D9) {
  'use strict';

  /* Runs inside the Worker (its source is sent as text, so it must not close over anything). */
  function workerMain(scope, Decoder) {
    scope.onmessage = async (e) => {
      const files = e.data.files;
      try {
        const result = await decodeWithTimings(Decoder, files, (done, total) => {
          scope.postMessage({ type: 'progress', done, total });
        }, (name) => scope.postMessage({ type: 'stage', stage: 'Decompressing ' + name }));
        scope.postMessage({ type: 'done', trace: result.trace, timings: result.timings }, Decoder.transferables(result.trace));
      } catch (err) {
        const partial = err && err.partial ? err.partial : null;
        scope.postMessage({
          type: 'error',
          error: { name: err && err.name, message: err && err.message ? err.message : String(err), offset: err && err.offset, file: err && err.file },
          partial,
        }, partial ? Decoder.transferables(partial) : []);
      }
    };
  }

  /* gunzip where needed, then decode; shared by the Worker and the main-thread fallback. */
  async function decodeWithTimings(Decoder, files, onProgress, onStage) {
    const t0 = performance.now();
    const inputs = [];
    for (const f of files) {
      let bytes = new Uint8Array(f.bytes);
      if (Decoder.isGzip(bytes)) {
        if (onStage) onStage(f.name || 'data');
        try {
          bytes = await Decoder.gunzip(bytes);
        } catch (e) {
          throw new Decoder.DecodeError((f.name ? f.name + ': ' : '') + 'gzip data is corrupt or cut short', -1, f.name);
        }
      }
      inputs.push({ name: f.name, bytes });
    }
    const t1 = performance.now();
    const trace = Decoder.decode(inputs, { onProgress });
    const t2 = performance.now();
    return { trace, timings: { gunzipMs: t1 - t0, decodeMs: t2 - t1, bytes: inputs.reduce((a, f) => a + f.bytes.length, 0) } };
  }

  let workerUrl = null;
  function makeWorker() {
    if (typeof Worker !== 'function' || typeof dial9DecoderFactory !== 'function') return null;
    if (!workerUrl) {
      const src = [
        '"use strict";',
        dial9DecoderFactory.toString(),
        'const Decoder = dial9DecoderFactory();',
        decodeWithTimings.toString(),
        '(' + workerMain.toString() + ')(self, Decoder);',
      ].join('\n');
      workerUrl = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    }
    try {
      return new Worker(workerUrl);
    } catch (e) {
      return null;
    }
  }

  class LoadError extends Error {
    constructor(message, details) {
      super(message);
      this.name = 'LoadError';
      Object.assign(this, details || {});
    }
  }

  /*
   * Decode [{name, bytes: ArrayBuffer}] → {trace, timings, where}. Rejects with a LoadError
   * carrying {offset, file, partial} for invalid data.
   */
  function decodeFiles(files, hooks) {
    hooks = hooks || {};
    const worker = makeWorker();
    if (!worker) return decodeOnMainThread(files, hooks);
    return new Promise((resolve, reject) => {
      let settled = false;
      worker.onmessage = (e) => {
        const m = e.data;
        if (m.type === 'progress') {
          if (hooks.onProgress) hooks.onProgress(m.done, m.total);
        } else if (m.type === 'stage') {
          if (hooks.onStage) hooks.onStage(m.stage);
        } else if (m.type === 'done') {
          settled = true;
          worker.terminate();
          resolve({ trace: m.trace, timings: m.timings, where: 'worker' });
        } else if (m.type === 'error') {
          settled = true;
          worker.terminate();
          reject(new LoadError(m.error.message, { offset: m.error.offset, file: m.error.file, partial: m.partial, decodeError: m.error.name === 'DecodeError' }));
        }
      };
      worker.onerror = (e) => {
        if (settled) return;
        settled = true;
        worker.terminate();
        // The Worker could not run (e.g. a browser without Blob workers): decode here instead.
        e.preventDefault();
        decodeOnMainThread(files, hooks).then(resolve, reject);
      };
      worker.postMessage({ files }, files.map((f) => f.bytes));
    });
  }

  async function decodeOnMainThread(files, hooks) {
    try {
      const r = await decodeWithTimings(window.Dial9Decoder, files, hooks.onProgress, hooks.onStage);
      return { trace: r.trace, timings: r.timings, where: 'main thread' };
    } catch (err) {
      if (err instanceof window.Dial9Decoder.DecodeError) {
        throw new LoadError(err.message, { offset: err.offset, file: err.file, partial: err.partial, decodeError: true });
      }
      throw err;
    }
  }

  /* Files from a picker or a drop, in name order (segments trace.0, trace.1, ...). */
  async function readFiles(fileList) {
    const list = Array.from(fileList).sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    const out = [];
    for (const f of list) out.push({ name: f.name, bytes: await f.arrayBuffer() });
    return out;
  }

  /*
   * The name a trace URL is shown under: its file name; for `dial9 serve`'s
   * /api/trace?run=R[&seg=N...][&file=NAME...], whose path says only "trace", the run and the
   * segments asked for ("R · segment 3").
   */
  function nameOfUrl(url) {
    let u;
    try {
      u = new URL(url, location.href);
    } catch (e) {
      return url;
    }
    const run = u.searchParams.get('run');
    if (run !== null && /\/api\/trace$/.test(u.pathname)) {
      const segs = u.searchParams.getAll('seg');
      const parts = segs.length ? [(segs.length === 1 ? 'segment ' : 'segments ') + segs.join(', ')] : [];
      parts.push(...u.searchParams.getAll('file'));
      return run + ' · ' + (parts.length ? parts.join(', ') : 'all segments');
    }
    let last = u.pathname.split('/').pop();
    try {
      last = decodeURIComponent(last);
    } catch (e) {
      // keep it encoded
    }
    return last || url;
  }

  async function fetchUrls(urls) {
    const out = [];
    for (const url of urls) {
      if (location.protocol === 'file:' && !/^https?:/i.test(url)) {
        throw new LoadError('Cannot load "' + url + '": a page opened from file:// may not read other files by URL. ' +
          'Open the trace with the Open button or drag it onto the page, or serve the viewer over HTTP (e.g. `dial9 serve`).');
      }
      let res;
      try {
        res = await fetch(url);
      } catch (e) {
        throw new LoadError('Cannot load "' + url + '": ' + (e && e.message ? e.message : e) +
          (location.protocol === 'file:' ? ' (pages opened from file:// cannot fetch; serve the viewer over HTTP)' : ''));
      }
      if (!res.ok) {
        // dial9 serve says in the body why (not a trace, no such run): show it, a line or a few
        const why = /^text\/plain/i.test(res.headers.get('content-type') || '') ? (await res.text()).trim().slice(0, 2000) : '';
        throw new LoadError('Cannot load "' + url + '": the server answered ' + res.status + ' ' + res.statusText +
          (why ? ': ' + why : ''), { status: res.status });
      }
      const name = nameOfUrl(url);
      out.push({ name, bytes: await res.arrayBuffer() });
    }
    return out;
  }

  D9.loader = { decodeFiles, readFiles, fetchUrls, nameOfUrl, LoadError };
})(window.D9 = window.D9 || {});
