// Writes a small dial9 trace (format v1, ../shared/reference/trace-format.md) with known
// content, encoded here from the format description and not with dial9's encoder, so the
// export tests compare dial9's output with facts fixed in this file:
//   node make_trace.mjs OUT.bin
//
// Times (ns, CLOCK_MONOTONIC), t = 1 s + offset:
//   stream 1 (worker 0, tid 1001)
//     +0 ms  SegmentMetadataEvent service=known-svc pid=4242 runtime.main=0,1; ClockSyncEvent
//     +0 ms  poll task 7 at src/known.c:12:1 (local queue 3) ... +12 ms        (exactly 12 ms)
//     +15 ms wake: task 7 wakes task 8 from worker 0
//     +20 ms park (cpu 5000 ns, queue 0) ... +30 ms unpark (cpu 5200, sched wait 250 us, queue 1)
//     +40 ms poll task 9 at src/known.c:40:1 ... +41 ms
//   stream 2 (worker 1, tid 1002)
//     +40 ms poll task 8 at src/other.c:5:3 ... +45 ms   (caused by the wake at +15 ms)
//     +41 ms QueueSampleEvent global_queue 5
//     +42 ms CPU sample, +43 ms context-switch sample: stack 0x1000 <- 0x2000 <- 0x3000
//     +50 ms a poll of task 10 that starts and ends at the same time
//     SymbolTableEntry 0x1000: leaf_fn (inline depth 0), inlined_fn (depth 1, inlined into
//     leaf_fn); 0x2000: mid_fn (src/mid.c:77); 0x3000 has no symbol.
import fs from 'node:fs';

const T0 = 1_000_000_000n;
const ms = (x) => T0 + BigInt(Math.round(x * 1e6));

class Stream {
  constructor() { this.bytes = [0x54, 0x52, 0x43, 0x00, 0x01]; this.base = 0n; this.types = new Map(); this.strings = new Map(); this.stacks = new Map(); }
  u8(v) { this.bytes.push(v & 0xff); }
  u16(v) { this.u8(v); this.u8(v >> 8); }
  u24(v) { this.u16(v & 0xffff); this.u8(v >> 16); }
  u32(v) { this.u16(v & 0xffff); this.u16(v >>> 16); }
  u64(v) { v = BigInt(v); for (let i = 0n; i < 8n; i++) this.u8(Number((v >> (8n * i)) & 0xffn)); }
  varint(v) { v = BigInt(v); while (v >= 0x80n) { this.u8(Number(v & 0x7fn) | 0x80); v >>= 7n; } this.u8(Number(v)); }
  str(s) { const b = Buffer.from(s); this.u32(b.length); for (const x of b) this.u8(x); }
  name16(s) { const b = Buffer.from(s); this.u16(b.length); for (const x of b) this.u8(x); }
  schema(name, fields, ts = true) {
    const id = this.types.size;
    this.types.set(name, { id, fields });
    this.u8(0x01); this.u16(id); this.name16(name); this.u8(ts ? 1 : 0); this.u16(fields.length);
    for (const [f, t] of fields) { this.name16(f); this.u8(t); }
  }
  pooledString(s) {
    if (!this.strings.has(s)) {
      const id = this.strings.size + 1;
      this.strings.set(s, id);
      this.u8(0x03); this.u32(1); this.u32(id); this.str(s);
    }
    return this.strings.get(s);
  }
  pooledStack(addrs) {
    const key = addrs.join(',');
    if (!this.stacks.has(key)) {
      const id = this.stacks.size + 1;
      this.stacks.set(key, id);
      this.u8(0x04); this.u32(1); this.u32(id); this.u32(addrs.length);
      for (const a of addrs) this.u64(a);
    }
    return this.stacks.get(key);
  }
  // values: in schema order; pooled strings/stacks are given as strings/arrays
  event(name, ts, values) {
    const t = this.types.get(name);
    const pre = t.fields.map(([, type], i) => (type === 7 ? this.pooledString(values[i]) : type === 6 ? this.pooledStack(values[i]) : values[i]));
    if (ts !== null && (ts < this.base || ts - this.base > 16777215n)) { this.u8(0x05); this.u64(ts); this.base = ts; }
    this.u8(0x02); this.u16(t.id);
    if (ts !== null) {
      this.u24(Number(ts - this.base));
      this.base = ts;
    }
    t.fields.forEach(([, type], i) => {
      const v = pre[i];
      switch (type) {
        case 9: this.varint(v); break;
        case 11: this.u8(v); break;
        case 13: this.u32(v); break;
        case 3: this.u8(v ? 1 : 0); break;
        case 6: case 7: this.u32(v); break;
        case 10: { const e = Object.entries(v); this.u32(e.length); for (const [k, x] of e) { this.str(k); this.str(x); } break; }
        default: throw new Error(`type ${type}`);
      }
    });
  }
}

const V = 9, U8 = 11, U32 = 13, PSTR = 7, PSTACK = 6, MAP = 10, BOOL = 3;
function schemas(s) {
  s.schema('PollStartEvent', [['worker_id', V], ['local_queue', U8], ['task_id', V], ['spawn_loc', PSTR]]);
  s.schema('PollEndEvent', [['worker_id', V]]);
  s.schema('WorkerParkEvent', [['worker_id', V], ['local_queue', U8], ['cpu_time_ns', V], ['tid', U32]]);
  s.schema('WorkerUnparkEvent', [['worker_id', V], ['local_queue', U8], ['cpu_time_ns', V], ['sched_wait_ns', V], ['tid', U32]]);
  s.schema('WakeEventEvent', [['waker_task_id', V], ['woken_task_id', V], ['target_worker', U8]]);
  s.schema('QueueSampleEvent', [['global_queue', U8]]);
  s.schema('CpuSampleEvent', [['worker_id', V], ['tid', U32], ['source', U8], ['callchain', PSTACK]]);
  s.schema('SymbolTableEntry', [['addr', V], ['size', V], ['symbol_name', PSTR], ['inline_depth', V], ['source_file', PSTR], ['source_line', V]]);
  s.schema('SegmentMetadataEvent', [['entries', MAP]]);
  s.schema('ClockSyncEvent', [['realtime_ns', V]]);
  s.schema('TaskSpawnEvent', [['task_id', V], ['spawn_loc', PSTR], ['instrumented', BOOL]]);
}

const a = new Stream();
schemas(a);
a.event('SegmentMetadataEvent', ms(0), [{ service: 'known-svc', pid: '4242', 'runtime.main': '0,1' }]);
a.event('ClockSyncEvent', ms(0), [1_700_000_000_000_000_000n]);
a.event('PollStartEvent', ms(0), [0, 3, 7, 'src/known.c:12:1']);
a.event('PollEndEvent', ms(12), [0]);
a.event('WakeEventEvent', ms(15), [7, 8, 0]);
a.event('WorkerParkEvent', ms(20), [0, 0, 5000, 1001]);
a.event('WorkerUnparkEvent', ms(30), [0, 1, 5200, 250000, 1001]);
a.event('PollStartEvent', ms(40), [0, 0, 9, 'src/known.c:40:1']);
a.event('PollEndEvent', ms(41), [0]);

const b = new Stream();
schemas(b);
b.event('PollStartEvent', ms(40), [1, 2, 8, 'src/other.c:5:3']);
b.event('QueueSampleEvent', ms(41), [5]);
b.event('CpuSampleEvent', ms(42), [1, 1002, 0, [0x1000n, 0x2000n, 0x3000n]]);
b.event('CpuSampleEvent', ms(43), [1, 1002, 1, [0x1000n, 0x2000n, 0x3000n]]);
b.event('PollEndEvent', ms(45), [1]);
b.event('PollStartEvent', ms(50), [1, 0, 10, 'src/other.c:9:9']);
b.event('PollEndEvent', ms(50), [1]);
b.event('SymbolTableEntry', 0n, [0x1000, 0, 'leaf_fn', 0, 'src/leaf.c', 10]);
b.event('SymbolTableEntry', 0n, [0x1000, 0, 'inlined_fn', 1, 'src/inl.h', 3]);
b.event('SymbolTableEntry', 0n, [0x2000, 0, 'mid_fn', 0, 'src/mid.c', 77]);

fs.writeFileSync(process.argv[2], Buffer.from([...a.bytes, ...b.bytes]));
