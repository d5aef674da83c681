// Synthetic traces written with the test encoder: for tests that must not depend on the shared
// fixture, for the browser tests (several segments, runtimes) and for speed measurements.
import { TraceWriter, declareBuiltins } from './encoder.mjs';

export const T0 = 5000000000000n; // 5000 s of monotonic time

/*
 * Two runtimes ("io": workers 0 and 1, "cpu": worker 2), tasks that hop between workers and wake
 * each other, parks with run-queue waits, CPU samples with symbolized stacks, a clock sync.
 * One slow poll: task 7 on worker 1 (tick 13), 12 ms, with a context switch inside it in `expand_fdtable`.
 * Returned as `segments` streams (each a complete file) so that tests can open several at once.
 */
export function runtimeTrace(segments = 2) {
  const files = [];
  const per = Math.ceil(60 / segments);
  let tick = 0;
  for (let s = 0; s < segments; s++) {
    const w = new TraceWriter().header();
    const id = declareBuiltins(w);
    w.stringPool([[1, 'src/server.c:120'], [2, 'src/worker.c:40'], [3, 'expand_fdtable'], [4, 'fs/file.c'], [5, 'handle_request'], [6, 'src/server.c'], [7, 'worker-io']]);
    w.stackPool([[1, [0xffffffff81234560n, 0x401230n]], [2, [0x401230n]]]);
    let t = T0 + BigInt(s) * 200000000n;
    if (s === 0) {
      w.event(id.SegmentMetadataEvent, t, [[['service', 'synthetic-service'], ['runtime.io', '0,1'], ['runtime.cpu', '2']]]);
      w.event(id.ClockSyncEvent, t, [1700000000000000000n]);
      w.event(id.SymbolTableEntry, 0n, [0xffffffff81234560n, 64, 3, 0, 4, 88]);
      w.event(id.SymbolTableEntry, 0n, [0x401230n, 32, 5, 0, 6, 77]);
    }
    for (let k = 0; k < per; k++, tick++) {
      const worker = tick % 3;
      const task = 1 + (tick % 7); // 7 tasks over 3 workers: tasks hop between workers
      const dur = tick === 13 ? 12000000n : BigInt(50000 + (tick % 5) * 40000);
      w.event(id.WakeEventEvent, t, [task === 1 ? 0 : task - 1, task, worker]);
      w.event(id.PollStartEvent, t + 1000n, [worker, tick % 4, task, worker === 2 ? 2 : 1]);
      w.event(id.CpuSampleEvent, t + 1000n + dur / 2n, [worker, 100 + worker, dur > 1000000n ? 1 : 0, 7, dur > 1000000n ? 1 : 2, worker]);
      w.event(id.PollEndEvent, t + 1000n + dur, [worker]);
      w.event(id.WorkerParkEvent, t + 2000n + dur, [worker, 0, 1000 * tick, 100 + worker]);
      w.event(id.WorkerUnparkEvent, t + 2000n + dur + 2500000n, [worker, 1, 1000 * tick + 20, tick % 6 === 0 ? 900000 : 3000, 100 + worker]);
      w.event(id.QueueSampleEvent, t + 3000n + dur, [tick % 7]);
      t += dur + 3000000n;
    }
    files.push({ name: `trace.${s}.bin`, bytes: w.bytes() });
  }
  return files;
}

/* About a million events (4 workers), as one file: the speed benchmark. */
export function millionEvents() {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.stringPool([[1, 'bench.c:1']]);
  // One 10 000-event block, repeated with its reset frame moved on in time: the decoder is what we time.
  const block = new TraceWriter();
  block.schemas = w.schemas;
  let t = 1000000000n;
  block.reset(t);
  for (let i = 0; i < 2500; i++) {
    block.event(id.PollStartEvent, t, [i & 3, 1, 1000 + i, 1]);
    block.event(id.WakeEventEvent, t + 500n, [1000 + i, 1001 + i, i & 3]);
    block.event(id.PollEndEvent, t + 900n, [i & 3]);
    block.event(id.QueueSampleEvent, t + 990n, [i & 255]);
    t += 1000n;
  }
  const head = w.bytes();
  const body = block.bytes();
  const reps = 100;
  const all = new Uint8Array(head.length + body.length * reps);
  all.set(head, 0);
  for (let r = 0; r < reps; r++) {
    all.set(body, head.length + r * body.length);
    new DataView(all.buffer).setBigUint64(head.length + r * body.length + 1, 1000000000n + BigInt(r) * 2600000n, true);
  }
  return all;
}
