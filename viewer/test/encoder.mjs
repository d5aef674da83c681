// A small encoder of dial9 trace format v1, for tests only: it writes exactly what the format
// reference describes, so that round trips check the decoder against an independent writer.

export const T = {
  I64: 1, F64: 2, BOOL: 3, STRING: 4, BYTES: 5, POOLED_STACK: 6, POOLED_STRING: 7,
  STACK: 8, VARINT: 9, STRING_MAP: 10, U8: 11, U16: 12, U32: 13, DYN_LIST: 14, DYN_MAP: 15,
  OPT: 0x80,
};

const MAX_DELTA = 16777215;

export class TraceWriter {
  constructor() {
    this.out = [];
    this.schemas = new Map(); // type id -> {hasTs, types}
    this.base = 0n;
  }

  // ---- raw pieces ----
  u8(v) { this.out.push(v & 0xff); return this; }
  u16(v) { this.out.push(v & 0xff, (v >> 8) & 0xff); return this; }
  u24(v) { this.out.push(v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff); return this; }
  u32(v) { for (let i = 0; i < 4; i++) this.out.push(Number((BigInt(v) >> BigInt(8 * i)) & 0xffn)); return this; }
  u64(v) { const b = BigInt.asUintN(64, BigInt(v)); for (let i = 0n; i < 8n; i++) this.out.push(Number((b >> (8n * i)) & 0xffn)); return this; }
  varint(v) {
    let b = BigInt.asUintN(64, BigInt(v));
    do {
      let byte = Number(b & 0x7fn);
      b >>= 7n;
      if (b !== 0n) byte |= 0x80;
      this.out.push(byte);
    } while (b !== 0n);
    return this;
  }
  text(s) { return Array.from(new TextEncoder().encode(s)); }
  str16(s) { const b = this.text(s); this.u16(b.length); this.out.push(...b); return this; }
  str32(s) { const b = this.text(s); this.u32(b.length); this.out.push(...b); return this; }
  raw(bytes) { this.out.push(...bytes); return this; }

  // ---- frames ----
  header(version = 1) { this.out.push(0x54, 0x52, 0x43, 0x00, version); this.schemas.clear(); this.base = 0n; return this; }

  schema(typeId, name, hasTs, fields) {
    this.u8(0x01).u16(typeId).str16(name).u8(hasTs ? 1 : 0).u16(fields.length);
    for (const [fname, ftype] of fields) this.str16(fname).u8(ftype);
    this.schemas.set(typeId, { hasTs, types: fields.map((f) => f[1]) });
    return this;
  }

  // An event with an explicit u24 delta (or no timestamp when the schema has none).
  eventRaw(typeId, delta, values) {
    const s = this.schemas.get(typeId);
    if (!s) throw new Error('encoder: no schema for type ' + typeId);
    this.u8(0x02).u16(typeId);
    if (s.hasTs) this.u24(delta);
    s.types.forEach((t, i) => this.value(t, values[i]));
    return this;
  }

  // An event at absolute time ts (ns), writing a reset frame first when the delta does not fit.
  event(typeId, ts, values) {
    const s = this.schemas.get(typeId);
    if (!s.hasTs) return this.eventRaw(typeId, 0, values);
    const t = BigInt(ts);
    if (t < this.base || t - this.base > BigInt(MAX_DELTA)) this.reset(t);
    const delta = Number(t - this.base);
    this.base = t;
    return this.eventRaw(typeId, delta, values);
  }

  reset(ts) { this.u8(0x05).u64(ts); this.base = BigInt(ts); return this; }

  stringPool(entries) {
    this.u8(0x03).u32(entries.length);
    for (const [id, s] of entries) this.u32(id).str32(s);
    return this;
  }

  stackPool(entries) {
    this.u8(0x04).u32(entries.length);
    for (const [id, frames] of entries) {
      this.u32(id).u32(frames.length);
      for (const a of frames) this.u64(a);
    }
    return this;
  }

  annotations(typeId, list) {
    this.u8(0x06).varint(typeId).u16(list.length);
    for (const [field, key, value] of list) this.u16(field).str16(key).str32(value);
    return this;
  }

  // ---- values ----
  value(type, v) {
    if (type & T.OPT) {
      if (v === null || v === undefined) return this.u8(0);
      this.u8(1);
      type &= ~T.OPT;
    }
    switch (type) {
      case T.I64: return this.u64(BigInt.asUintN(64, BigInt(v)));
      case T.F64: { const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, v, true); return this.raw(b); }
      case T.BOOL: return this.u8(v ? 1 : 0);
      case T.STRING: return this.str32(v);
      case T.BYTES: this.u32(v.length); return this.raw(v);
      case T.POOLED_STACK: return this.u32(v);
      case T.POOLED_STRING: return this.u32(v);
      case T.STACK: this.u32(v.length); for (const a of v) this.u64(a); return this;
      case T.VARINT: return this.varint(v);
      case T.STRING_MAP: this.u32(v.length); for (const [k, x] of v) this.str32(k).str32(x); return this;
      case T.U8: return this.u8(v);
      case T.U16: return this.u16(v);
      case T.U32: return this.u32(v);
      case T.DYN_LIST: this.u32(v.length); for (const [t, x] of v) this.u8(t).value(t, x); return this;
      case T.DYN_MAP:
        this.u32(v.length);
        for (const [[kt, k], [vt, x]] of v) this.u8(kt).value(kt, k).u8(vt).value(vt, x);
        return this;
      default: throw new Error('encoder: unknown type ' + type);
    }
  }

  bytes() { return Uint8Array.from(this.out); }
}

// The built-in schemas as dial9 writes them (see the format reference).
export const BUILTIN = {
  PollStartEvent: [['worker_id', T.VARINT], ['local_queue', T.U8], ['task_id', T.VARINT], ['spawn_loc', T.POOLED_STRING]],
  PollEndEvent: [['worker_id', T.VARINT]],
  WorkerParkEvent: [['worker_id', T.VARINT], ['local_queue', T.U8], ['cpu_time_ns', T.VARINT], ['tid', T.U32]],
  WorkerUnparkEvent: [['worker_id', T.VARINT], ['local_queue', T.U8], ['cpu_time_ns', T.VARINT], ['sched_wait_ns', T.VARINT | T.OPT], ['tid', T.U32]],
  QueueSampleEvent: [['global_queue', T.U8]],
  TaskSpawnEvent: [['task_id', T.VARINT], ['spawn_loc', T.POOLED_STRING], ['instrumented', T.BOOL]],
  TaskTerminateEvent: [['task_id', T.VARINT]],
  WakeEventEvent: [['waker_task_id', T.VARINT], ['woken_task_id', T.VARINT], ['target_worker', T.U8]],
  CpuSampleEvent: [['worker_id', T.VARINT], ['tid', T.U32], ['source', T.U8], ['thread_name', T.POOLED_STRING | T.OPT], ['callchain', T.POOLED_STACK], ['cpu', T.VARINT | T.OPT]],
  TaskDumpEvent: [['task_id', T.VARINT], ['callchain', T.POOLED_STACK]],
  SegmentMetadataEvent: [['entries', T.STRING_MAP]],
  ClockSyncEvent: [['realtime_ns', T.VARINT]],
  SymbolTableEntry: [['addr', T.VARINT], ['size', T.VARINT], ['symbol_name', T.POOLED_STRING], ['inline_depth', T.VARINT], ['source_file', T.POOLED_STRING], ['source_line', T.VARINT]],
};

// Declares every built-in schema with type ids 0..n-1; returns name -> type id.
export function declareBuiltins(w) {
  const ids = {};
  Object.keys(BUILTIN).forEach((name, i) => {
    w.schema(i, name, true, BUILTIN[name]);
    ids[name] = i;
  });
  return ids;
}
