/*
 * Decoder of dial9 trace format v1 (see docs/viewer.md and the format reference).
 *
 * One decoder for the viewer, its Web Worker and node. The whole module is one factory function
 * so that the viewer can build a Worker from `dial9DecoderFactory.toString()` through a Blob URL:
 * module scripts, module workers and fetch() are all blocked from file:// in Chromium, while a
 * classic script plus a Blob worker works everywhere. In node, `module.exports` is the API.
 *
 * Output is column-oriented (typed arrays per event kind) so that ten million events fit in
 * memory and can be handed to the main thread by transferring buffers instead of copying.
 */
/* exported dial9DecoderFactory */
function dial9DecoderFactory() {
  'use strict';

  const FRAME_SCHEMA = 0x01;
  const FRAME_EVENT = 0x02;
  const FRAME_STRING_POOL = 0x03;
  const FRAME_STACK_POOL = 0x04;
  const FRAME_TIMESTAMP_RESET = 0x05;
  const FRAME_ANNOTATIONS = 0x06;
  const MAGIC0 = 0x54; // 'T': first byte of "TRC\0"; never a frame tag

  const T = {
    I64: 1, F64: 2, BOOL: 3, STRING: 4, BYTES: 5, POOLED_STACK: 6, POOLED_STRING: 7,
    STACK: 8, VARINT: 9, STRING_MAP: 10, U8: 11, U16: 12, U32: 13, DYN_LIST: 14, DYN_MAP: 15,
  };
  const OPTIONAL = 0x80;
  const TYPE_NAMES = ['?', 'I64', 'F64', 'Bool', 'String', 'Bytes', 'PooledStackFrames',
    'PooledString', 'StackFrames', 'Varint', 'StringMap', 'U8', 'U16', 'U32', 'DynamicList',
    'DynamicMap'];

  const TWO32 = 4294967296;
  const WORKER_NONE_ID = 255; // D9_WORKER_NONE: a record naming no worker

  /* Known schemas: which fields each kind needs, by name (type ids are local to a stream). */
  const K = {
    OTHER: 0, POLL_START: 1, POLL_END: 2, PARK: 3, UNPARK: 4, QUEUE: 5, SPAWN: 6, TERMINATE: 7,
    WAKE: 8, CPU: 9, DUMP: 10, META: 11, CLOCK: 12, SYMBOL: 13, COVERAGE: 14, ORIGIN: 15,
    SPAN_ENTER: 16, SPAN_EXIT: 17, ALLOC: 18, FREE: 19, SWITCH: 20, DROP: 21, POLL_CPU: 22,
    REGISTERED: 23,
  };
  const KNOWN = {
    PollStartEvent: [K.POLL_START, ['worker_id', 'task_id', 'spawn_loc', 'local_queue']],
    PollEndEvent: [K.POLL_END, ['worker_id']],
    // a long poll's exact CPU time (docs/schemas.md): its worker's latest closed poll's, once
    PollCpuEvent: [K.POLL_CPU, ['worker_id', 'cpu_time_ns', 'exact']],
    WorkerParkEvent: [K.PARK, ['worker_id', 'local_queue', 'cpu_time_ns', 'tid']],
    WorkerUnparkEvent: [K.UNPARK, ['worker_id', 'local_queue', 'cpu_time_ns', 'sched_wait_ns', 'tid']],
    QueueSampleEvent: [K.QUEUE, ['global_queue']],
    TaskSpawnEvent: [K.SPAWN, ['task_id', 'spawn_loc', 'instrumented']],
    TaskTerminateEvent: [K.TERMINATE, ['task_id']],
    WakeEventEvent: [K.WAKE, ['waker_task_id', 'woken_task_id', 'target_worker']],
    CpuSampleEvent: [K.CPU, ['worker_id', 'tid', 'source', 'thread_name', 'callchain', 'cpu']],
    TaskDumpEvent: [K.DUMP, ['task_id', 'callchain']],
    SegmentMetadataEvent: [K.META, ['entries']],
    ClockSyncEvent: [K.CLOCK, ['realtime_ns']],
    CoverageEvent: [K.COVERAGE, ['source', 'mode', 'one_in']], // the cost governor (docs/schemas.md)
    StackOriginEvent: [K.ORIGIN, ['callchain', 'method']], // how a stack was obtained (docs/schemas.md)
    // d9_span_begin / d9_span_end (docs/schemas.md): every mark kept, paired by viewer/src/spans.js
    SpanEnterEvent: [K.SPAN_ENTER, ['worker_id', 'span_id', 'span_name', 'task_id', 'tid']],
    SpanExitEvent: [K.SPAN_EXIT, ['worker_id', 'span_id', 'span_name', 'task_id', 'tid']],
    // the sampled heap (docs/heap-profiling.md), dial9's names: weighted by viewer/src/heap.js
    AllocEvent: [K.ALLOC, ['tid', 'size', 'addr', 'callchain']],
    FreeEvent: [K.FREE, ['tid', 'addr', 'size', 'alloc_timestamp_ns']],
    // the thread's off-CPU intervals and the drops that leave gaps: viewer/src/attribution.js
    SchedSwitchEvent: [K.SWITCH, ['tid', 'worker_id', 'switch_out', 'preempted']],
    // a thread's worker from then on (src/model/thread_worker.h); kept in `other` as well
    WorkerRegisteredEvent: [K.REGISTERED, ['worker_id', 'tid']],
    DroppedEventsEvent: [K.DROP, ['worker_id', 'tid', 'count']],
    SymbolTableEntry: [K.SYMBOL, ['addr', 'size', 'symbol_name', 'inline_depth', 'source_file', 'source_line']],
  };

  class DecodeError extends Error {
    constructor(message, offset, file) {
      super(message + (offset >= 0 ? ' (at byte ' + offset + (file ? ' of ' + file : '') + ')' : ''));
      this.name = 'DecodeError';
      this.offset = offset;
      this.file = file || '';
      this.partial = null; // the trace decoded before the error, when there is one
    }
  }

  const TRUNCATED = { truncated: true }; // thrown when a read runs past the end of the data

  /* ---------- growable column tables ---------- */

  function makeTable(spec) {
    const cols = {};
    for (const k in spec) cols[k] = new spec[k](64);
    return { n: 0, cap: 64, spec, c: cols };
  }
  function grow(t) {
    const cap = t.cap * 2;
    for (const k in t.spec) {
      const a = new t.spec[k](cap);
      a.set(t.c[k]);
      t.c[k] = a;
    }
    t.cap = cap;
  }
  function trim(t) {
    const out = { count: t.n };
    for (const k in t.spec) out[k] = t.c[k].slice(0, t.n);
    return out;
  }

  /* ---------- decoding state (one decode at a time per factory instance) ---------- */

  let buf = null; // Uint8Array of the current file
  let p = 0;
  let end = 0;
  let utf8 = null;

  function need(n) {
    if (p + n > end) throw TRUNCATED;
  }
  function u8() {
    if (p >= end) throw TRUNCATED;
    return buf[p++];
  }
  function u16() {
    need(2);
    const v = buf[p] | (buf[p + 1] << 8);
    p += 2;
    return v;
  }
  function u32() {
    need(4);
    const v = (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16)) + buf[p + 3] * 16777216;
    p += 4;
    return v;
  }
  /* A u64 as a Number when exact, else as a BigInt (addresses, wall clock). */
  function u64() {
    const lo = u32();
    const hi = u32();
    if (hi < 0x200000) return hi * TWO32 + lo;
    return (BigInt(hi) << 32n) | BigInt(lo);
  }
  function i64() {
    const lo = u32();
    const hi = u32() | 0;
    if (hi >= -0x200000 && hi < 0x200000) return hi * TWO32 + lo;
    return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo));
  }
  /* Unsigned LEB128: a Number while it fits in 49 bits (always exact), else a BigInt. */
  function varint() {
    if (p >= end) throw TRUNCATED;
    let b = buf[p++];
    if (b < 0x80) return b;
    let v = b & 0x7f;
    let mul = 128;
    for (let i = 1; i < 7; i++) {
      if (p >= end) throw TRUNCATED;
      b = buf[p++];
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
    if (p >= end) throw TRUNCATED;
    b = buf[p];
    if (b < 16) { // the 8th and last byte keeps the value below 2^53: still exact
      p++;
      return v + b * mul;
    }
    let big = BigInt(v);
    let shift = 49n;
    for (let i = 7; i < 10; i++) {
      if (p >= end) throw TRUNCATED;
      b = buf[p++];
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) {
        big = BigInt.asUintN(64, big);
        return big <= 9007199254740991n ? Number(big) : big;
      }
      shift += 7n;
    }
    throw new DecodeError('varint longer than 10 bytes', p - 10, curFile);
  }
  function str(n) {
    need(n);
    const s = n === 0 ? '' : utf8.decode(buf.subarray(p, p + n));
    p += n;
    return s;
  }

  /* ---------- per-decode state ---------- */

  let curFile = '';
  let strings; // global string table: id -> string (pool entries of all streams, deduplicated)
  let stringIds; // string -> id
  let stacks; // global stack table: id -> Uint32Array of (lo, hi) pairs, leaf first
  let truncatedStacks; // global stack ids a StackOriginEvent said were truncated (method 3)
  let stackIds; // "lo,hi,..." key -> id
  let st; // per-stream state
  let counts;
  let tables;
  let tidWorker; // tid -> its thread's worker so far (noteThreadWorker)
  let other;
  let schemasByName;
  let originHi, originLo, originSet;
  let opts;

  function internString(s) {
    let id = stringIds.get(s);
    if (id === undefined) {
      id = strings.length;
      strings.push(s);
      stringIds.set(s, id);
    }
    return id;
  }
  function internStack(words) {
    let key = '';
    for (let i = 0; i < words.length; i++) key += words[i] + ',';
    let id = stackIds.get(key);
    if (id === undefined) {
      id = stacks.length;
      stacks.push(words);
      stackIds.set(key, id);
    }
    return id;
  }

  function newStream(offset) {
    return {
      offset,
      schemas: [], // type id -> schema
      strPool: new Map(), // pool id -> global string id
      stackPool: new Map(), // pool id -> global stack id
      pendingStr: new Map(), // pool id referenced before its definition -> {id, at}
      pendingStack: new Map(),
      baseRel: 0, // running timestamp base, relative to the trace origin, once anchored
      anchored: false, // baseRel is set (by a reset, or to absolute 0 at the first event)
    };
  }

  /* Pool ids may be referenced before they are defined: hand out a placeholder id and fill it. */
  function poolString(pid, at) {
    const id = st.strPool.get(pid);
    if (id !== undefined) return id;
    const pend = st.pendingStr.get(pid);
    if (pend) return pend.id;
    const gid = strings.length;
    strings.push(null);
    st.pendingStr.set(pid, { id: gid, at });
    return gid;
  }
  function poolStack(pid, at) {
    const id = st.stackPool.get(pid);
    if (id !== undefined) return id;
    const pend = st.pendingStack.get(pid);
    if (pend) return pend.id;
    const gid = stacks.length;
    stacks.push(null);
    st.pendingStack.set(pid, { id: gid, at });
    return gid;
  }

  function endStream(truncated) {
    if (!st) return;
    for (const [pid, pend] of st.pendingStr) {
      if (!truncated) throw new DecodeError('string pool id ' + pid + ' is used but never defined in its stream', pend.at, curFile);
      strings[pend.id] = '<undefined string #' + pid + '>';
    }
    for (const [pid, pend] of st.pendingStack) {
      if (!truncated) throw new DecodeError('stack pool id ' + pid + ' is used but never defined in its stream', pend.at, curFile);
      stacks[pend.id] = new Uint32Array(0);
    }
    st = null;
  }

  /* ---------- frames ---------- */

  function readSchema(frameStart) {
    const typeId = u16();
    const name = str(u16());
    const hasTs = u8() !== 0;
    const nf = u16();
    const fields = [];
    for (let i = 0; i < nf; i++) {
      const fname = str(u16());
      const ftype = u8();
      const base = ftype & ~OPTIONAL;
      if (base < 1 || base > 15) {
        throw new DecodeError('schema "' + name + '" field "' + fname + '" has unknown type tag 0x' + ftype.toString(16), p - 1, curFile);
      }
      fields.push({ name: fname, type: ftype });
    }
    const sig = name + '|' + (hasTs ? 1 : 0) + '|' + fields.map((f) => f.name + ':' + f.type).join(',');
    const prev = st.schemas[typeId];
    if (prev) {
      if (prev.sig !== sig) throw new DecodeError('type id ' + typeId + ' registered again with a different schema ("' + prev.name + '" then "' + name + '")', frameStart, curFile);
      counts.schemaFrames++;
      return;
    }
    const known = KNOWN[name];
    const kind = known ? known[0] : K.OTHER;
    const slots = [];
    if (known) {
      for (const fname of known[1]) slots.push(fields.findIndex((f) => f.name === fname));
    }
    let info = schemasByName.get(sig);
    if (!info) {
      info = { name, hasTimestamp: hasTs, fields: fields.map((f) => ({ name: f.name, type: f.type, typeName: typeName(f.type) })), annotations: [] };
      schemasByName.set(sig, info);
    }
    st.schemas[typeId] = {
      name, hasTs, fields, types: Int32Array.from(fields.map((f) => f.type)), kind, slots, sig, info,
    };
    counts.schemaFrames++;
  }

  function typeName(t) {
    return (t & OPTIONAL ? 'Option<' : '') + (TYPE_NAMES[t & ~OPTIONAL] || '?') + (t & OPTIONAL ? '>' : '');
  }

  function readStringPool() {
    const n = u32();
    for (let i = 0; i < n; i++) {
      const pid = u32();
      const s = str(u32());
      const pend = st.pendingStr.get(pid);
      if (pend) {
        strings[pend.id] = s;
        st.pendingStr.delete(pid);
        st.strPool.set(pid, pend.id);
      } else {
        st.strPool.set(pid, internString(s));
      }
    }
    counts.stringPoolFrames++;
  }

  function readStackFrames(count) {
    need(count * 8);
    const words = new Uint32Array(count * 2);
    for (let i = 0; i < count * 2; i++) {
      words[i] = (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16)) + buf[p + 3] * 16777216;
      p += 4;
    }
    return words;
  }

  function readStackPool() {
    const n = u32();
    for (let i = 0; i < n; i++) {
      const pid = u32();
      const frames = u32();
      const words = readStackFrames(frames);
      const pend = st.pendingStack.get(pid);
      if (pend) {
        stacks[pend.id] = words;
        st.pendingStack.delete(pid);
        st.stackPool.set(pid, pend.id);
      } else {
        st.stackPool.set(pid, internStack(words));
      }
    }
    counts.stackPoolFrames++;
  }

  function readReset() {
    need(8);
    const lo = (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16)) + buf[p + 3] * 16777216;
    const hi = (buf[p + 4] | (buf[p + 5] << 8) | (buf[p + 6] << 16)) + buf[p + 7] * 16777216;
    p += 8;
    if (!originSet) setOrigin(hi, lo);
    // Exact as long as the distance to the origin is below 2^53 ns (104 days).
    st.baseRel = (hi - originHi) * TWO32 + (lo - originLo);
    st.anchored = true;
    counts.resetFrames++;
  }

  function readAnnotations() {
    const typeId = varint();
    const n = u16();
    const list = [];
    for (let i = 0; i < n; i++) {
      const field = u16();
      const key = str(u16());
      const value = str(u32());
      list.push({ field, key, value });
    }
    const schema = st.schemas[typeId];
    if (schema) {
      for (const a of list) {
        const f = schema.fields[a.field];
        const dup = schema.info.annotations.some((b) => b.field === a.field && b.key === a.key && b.value === a.value);
        if (!dup) schema.info.annotations.push({ field: a.field, fieldName: f ? f.name : '', key: a.key, value: a.value });
      }
    }
    counts.annotationFrames++;
  }

  /* A value of any field type, for fields the viewer has no column for. */
  function readValue(type, at) {
    if (type & OPTIONAL) {
      const present = u8();
      if (present === 0) return null;
      if (present !== 1) throw new DecodeError('bad presence byte ' + present + ' for an optional field', p - 1, curFile);
      type &= ~OPTIONAL;
    }
    switch (type) {
      case T.VARINT: return varint();
      case T.U8: return u8();
      case T.U16: return u16();
      case T.U32: return u32();
      case T.I64: return i64();
      case T.F64: {
        need(8);
        const v = new DataView(buf.buffer, buf.byteOffset + p, 8).getFloat64(0, true);
        p += 8;
        return v;
      }
      case T.BOOL: return u8() !== 0;
      case T.STRING: return str(u32());
      case T.BYTES: {
        const n = u32();
        need(n);
        const b = buf.slice(p, p + n);
        p += n;
        return b;
      }
      case T.POOLED_STACK: return poolStack(u32(), at);
      case T.POOLED_STRING: return poolString(u32(), at);
      case T.STACK: return internStack(readStackFrames(u32()));
      case T.STRING_MAP: {
        const n = u32();
        const out = [];
        for (let i = 0; i < n; i++) {
          const k = str(u32());
          out.push([k, str(u32())]);
        }
        return out;
      }
      case T.DYN_LIST: {
        const n = u32();
        const out = [];
        for (let i = 0; i < n; i++) out.push(readTagged(at));
        return out;
      }
      case T.DYN_MAP: {
        const n = u32();
        const out = [];
        for (let i = 0; i < n; i++) {
          const k = readTagged(at);
          out.push([k, readTagged(at)]);
        }
        return out;
      }
      default:
        throw new DecodeError('unknown field type tag 0x' + type.toString(16), p, curFile);
    }
  }
  function readTagged(at) {
    const tagAt = p;
    const tag = u8();
    const base = tag & ~OPTIONAL;
    if (base < 1 || base > 15) throw new DecodeError('unknown value type tag 0x' + tag.toString(16) + ' in a dynamic list or map', tagAt, curFile);
    return readValue(tag, at);
  }

  const vals = [];

  function readEvent(frameStart) {
    need(2);
    const typeId = buf[p] | (buf[p + 1] << 8);
    p += 2;
    const s = st.schemas[typeId];
    if (!s) throw new DecodeError('event of type id ' + typeId + ' before its schema', frameStart, curFile);
    let ts = 0;
    if (s.hasTs) {
      need(3);
      const delta = buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16);
      p += 3;
      if (!st.anchored) {
        // No reset yet in this stream: the base is absolute 0.
        if (!originSet) setOrigin(0, 0);
        st.baseRel = zeroRel;
        st.anchored = true;
      }
      ts = st.baseRel + delta;
    }
    const types = s.types;
    const nf = types.length;
    for (let i = 0; i < nf; i++) {
      const t = types[i];
      // Fast paths for the types of the hot built-in events.
      if (t === T.VARINT) {
        if (p < end && buf[p] < 0x80) vals[i] = buf[p++];
        else vals[i] = varint();
      } else if (t === T.U8) {
        if (p >= end) throw TRUNCATED;
        vals[i] = buf[p++];
      } else if (t === T.POOLED_STRING) {
        vals[i] = poolString(u32(), frameStart);
      } else {
        vals[i] = readValue(t, frameStart);
      }
    }
    // The frame is complete: only now does it change any state.
    if (s.hasTs) {
      st.baseRel = ts;
      if (ts !== zeroRel) { // dial9 writes "no time" as absolute 0: keep those out of the span
        if (ts < tMin) tMin = ts;
        if (ts > tMax) tMax = ts;
      }
    }
    counts.events++;
    const bn = counts.byName;
    bn[s.name] = (bn[s.name] || 0) + 1;
    store(s, ts);
  }

  let tMin = Infinity;
  let tMax = -Infinity;
  let zeroRel = 0; // absolute time 0 in the relative frame

  /* Relative time 0 is the first timestamp reset of the data (exact doubles for 104 days). */
  function setOrigin(hi, lo) {
    originHi = hi;
    originLo = lo;
    originSet = true;
    zeroRel = -(hi * TWO32 + lo);
  }

  function num(v) {
    return v === null || v === undefined ? NaN : typeof v === 'bigint' ? Number(v) : (typeof v === 'boolean' ? (v ? 1 : 0) : v);
  }
  function slot(s, k) {
    const i = s.slots[k];
    return i < 0 ? null : vals[i];
  }
  function idOrMinus(v) {
    return v === null || v === undefined ? -1 : v;
  }

  function store(s, ts) {
    let t, i;
    switch (s.kind) {
      case K.POLL_START:
      case K.POLL_END:
        t = tables.pollEdges;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.worker[i] = num(slot(s, 0));
        t.c.cpu[i] = NaN;
        if (s.kind === K.POLL_START) {
          t.c.isEnd[i] = 0;
          t.c.task[i] = num(slot(s, 1));
          t.c.loc[i] = idOrMinus(slot(s, 2));
          t.c.localQueue[i] = num(slot(s, 3));
        } else {
          t.c.isEnd[i] = 1;
          t.c.task[i] = NaN;
          t.c.loc[i] = -1;
          t.c.localQueue[i] = NaN;
        }
        return;
      case K.POLL_CPU:
        // paired in time order with the worker's polls (finishPolls); one without a time is
        // no poll's, as in the C readers
        if (!s.hasTs) return storeOther(s, ts);
        t = tables.pollEdges;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.worker[i] = num(slot(s, 0));
        t.c.isEnd[i] = 2;
        t.c.task[i] = NaN;
        t.c.loc[i] = -1;
        t.c.localQueue[i] = NaN;
        t.c.cpu[i] = num(slot(s, 2)) ? num(slot(s, 1)) : NaN; // NaN: "not exact"
        return;
      case K.PARK:
      case K.UNPARK:
        t = tables.parkEdges;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.worker[i] = num(slot(s, 0));
        t.c.localQueue[i] = num(slot(s, 1));
        // Not measured (schedstat off, or not read within DIAL9_SCHEDSTAT_RESOLUTION_US of the
        // thread's previous read): absent in dial9-c's traces, cpu_time_ns 0 in older ones and
        // dial9's, where the unpark's sched_wait_ns 0 then measured nothing either. NaN both.
        t.c.cpuTime[i] = num(slot(s, 2)) || NaN;
        if (s.kind === K.PARK) {
          t.c.isEnd[i] = 0;
          t.c.schedWait[i] = NaN;
          t.c.tid[i] = num(slot(s, 3));
        } else {
          t.c.isEnd[i] = 1;
          const wait = num(slot(s, 3));
          t.c.schedWait[i] = wait > 0 || Number.isFinite(t.c.cpuTime[i]) ? wait : NaN;
          t.c.tid[i] = num(slot(s, 4));
        }
        if (t.c.tid[i] > 0) noteThreadWorker(t.c.tid[i], t.c.worker[i], true);
        return;
      case K.REGISTERED: {
        const tid = num(slot(s, 1));
        if (tid > 0) noteThreadWorker(tid, num(slot(s, 0)), true);
        return storeOther(s, ts);
      }
      case K.WAKE:
        t = tables.wakes;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.waker[i] = num(slot(s, 0));
        t.c.woken[i] = num(slot(s, 1));
        t.c.targetWorker[i] = num(slot(s, 2));
        return;
      case K.CPU:
        t = tables.cpuSamples;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.recordWorker[i] = num(slot(s, 0));
        t.c.tid[i] = num(slot(s, 1));
        // its own worker, else its thread's (src/model/thread_worker.h): a timer sample's
        // (source 0) as much as a context-switch sample's, the thread ran as that worker
        t.c.worker[i] = namedWorker(t.c.recordWorker[i]) || !Number.isFinite(t.c.tid[i])
          ? t.c.recordWorker[i]
          : (tidWorker.has(t.c.tid[i]) ? tidWorker.get(t.c.tid[i]) : t.c.recordWorker[i]);
        t.c.source[i] = num(slot(s, 2));
        t.c.threadName[i] = idOrMinus(slot(s, 3));
        t.c.stack[i] = idOrMinus(slot(s, 4));
        t.c.cpu[i] = num(slot(s, 5));
        t.c.seq[i] = counts.events;
        return;
      case K.DUMP:
        t = tables.taskDumps;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.task[i] = num(slot(s, 0));
        t.c.stack[i] = idOrMinus(slot(s, 1));
        return;
      case K.QUEUE:
        t = tables.queueSamples;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.value[i] = num(slot(s, 0));
        return;
      case K.SPAWN:
        t = tables.spawns;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.task[i] = num(slot(s, 0));
        t.c.loc[i] = idOrMinus(slot(s, 1));
        t.c.instrumented[i] = num(slot(s, 2));
        return;
      case K.TERMINATE:
        t = tables.terminates;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.task[i] = num(slot(s, 0));
        return;
      case K.SYMBOL: {
        t = tables.symbols;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        const addr = slot(s, 0);
        const a = typeof addr === 'bigint' ? addr : BigInt(num(addr) || 0);
        t.c.addrLo[i] = Number(a & 0xffffffffn);
        t.c.addrHi[i] = Number((a >> 32n) & 0xffffffffn);
        t.c.size[i] = num(slot(s, 1));
        t.c.name[i] = idOrMinus(slot(s, 2));
        t.c.inlineDepth[i] = num(slot(s, 3));
        t.c.file[i] = idOrMinus(slot(s, 4));
        t.c.line[i] = num(slot(s, 5));
        return;
      }
      case K.ALLOC:
      case K.FREE: {
        t = s.kind === K.ALLOC ? tables.heapAllocs : tables.heapFrees;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.seq[i] = counts.events;
        t.c.meta[i] = meta.length;
        t.c.tid[i] = num(slot(s, 0));
        const addr = slot(s, s.kind === K.ALLOC ? 2 : 1);
        const a = typeof addr === 'bigint' ? addr : BigInt(num(addr) || 0);
        t.c.addrLo[i] = Number(a & 0xffffffffn);
        t.c.addrHi[i] = Number((a >> 32n) & 0xffffffffn);
        t.c.size[i] = num(slot(s, s.kind === K.ALLOC ? 1 : 2));
        if (s.kind === K.ALLOC) t.c.stack[i] = idOrMinus(slot(s, 3));
        return;
      }
      case K.SWITCH:
        t = tables.switches;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.tid[i] = num(slot(s, 0));
        t.c.worker[i] = num(slot(s, 1));
        noteThreadWorker(t.c.tid[i], t.c.worker[i], false); // attribution.js reads the records
        t.c.out[i] = num(slot(s, 2)) ? 1 : 0;
        t.c.preempted[i] = num(slot(s, 3)) ? 1 : 0;
        t.c.seq[i] = counts.events;
        return;
      case K.DROP:
        t = tables.drops;
        if (t.n === t.cap) grow(t);
        i = t.n++;
        t.c.ts[i] = ts;
        t.c.worker[i] = num(slot(s, 0));
        t.c.tid[i] = num(slot(s, 1));
        t.c.lost[i] = num(slot(s, 2));
        return;
      case K.META: {
        const e = slot(s, 0);
        meta.push({ ts, entries: Array.isArray(e) ? e : [] });
        return;
      }
      case K.COVERAGE: {
        // pooled strings are global string ids here, resolved when the trace is complete
        coverage.push({ ts, source: idOrMinus(slot(s, 0)), mode: idOrMinus(slot(s, 1)), oneIn: num(slot(s, 2)) });
        return;
      }
      case K.ORIGIN: {
        // only "truncated" matters to the views: unwinding stopped before the outermost frame
        const id = idOrMinus(slot(s, 0));
        if (id >= 0 && num(slot(s, 1)) === 3) truncatedStacks.add(id);
        return;
      }
      case K.SPAN_ENTER:
      case K.SPAN_EXIT: {
        // ids are the application's u64: kept as decimal text, exact beyond 2^53
        const id = slot(s, 1);
        const name = slot(s, 2);
        spanMarks.push({
          ts, enter: s.kind === K.SPAN_ENTER, worker: num(slot(s, 0)),
          id: id === null || id === undefined ? '' : String(id),
          name: typeof name === 'number' ? name : -1, // a pooled string id, resolved in finish
          nameText: typeof name === 'string' ? name : null,
          task: num(slot(s, 3)) || 0, tid: num(slot(s, 4)),
        });
        return;
      }
      case K.CLOCK: {
        const r = slot(s, 0);
        clocks.push({ ts, realtimeNs: r === null ? '' : String(r) });
        return;
      }
      default:
        storeOther(s, ts);
    }
  }

  let meta;
  let clocks;
  let spanMarks; // SpanEnterEvent / SpanExitEvent: {ts, enter, worker, id, name, task, tid}
  let coverage; // CoverageEvent records: {ts, source, mode (string ids), oneIn}

  /* Whose worker a thread's records are (src/model/thread_worker.h): the latest worker id its
   * parks, unparks, registration and switch records named, in file order. `listed`: kept in
   * threadWorkers too, for attribution.js's switch records (it walks the switches itself). */
  function namedWorker(w) {
    return Number.isFinite(w) && w !== WORKER_NONE_ID;
  }
  function noteThreadWorker(tid, worker, listed) {
    if (!namedWorker(worker) || !Number.isFinite(tid)) return;
    tidWorker.set(tid, worker);
    if (!listed) return;
    const tw = tables.threadWorkers;
    if (tw.n === tw.cap) grow(tw);
    const j = tw.n++;
    tw.c.seq[j] = counts.events;
    tw.c.tid[j] = tid;
    tw.c.worker[j] = worker;
  }

  function storeOther(s, ts) {
    let o = other[s.name];
    if (!o) {
      o = other[s.name] = { count: 0, fields: s.fields.map((f) => f.name), rows: [] };
    }
    o.count++;
    if (o.rows.length < opts.maxOtherRows) {
      const row = [ts];
      for (let i = 0; i < s.fields.length; i++) {
        const v = vals[i];
        row.push(typeof v === 'bigint' ? v.toString() : v);
      }
      o.rows.push(row);
    }
  }

  /* ---------- the frame loop over one file ---------- */

  const HEADER = [0x54, 0x52, 0x43, 0x00];

  function decodeFile(bytes, name, fileInfo) {
    buf = bytes;
    p = 0;
    end = bytes.length;
    curFile = name;
    st = null;
    if (end === 0) {
      fileInfo.notes.push('empty file');
      return;
    }
    let frameStart = 0;
    let nextProgress = 1 << 20;
    try {
      while (p < end) {
        frameStart = p;
        const tag = buf[p];
        if (tag === MAGIC0 || st === null) {
          // A stream header: at the start of the file, or concatenated at a frame boundary.
          for (let i = 0; i < 4; i++) {
            if (p + i >= end) throw TRUNCATED;
            if (buf[p + i] !== HEADER[i]) {
              if (st === null) throw new DecodeError('not a dial9 trace: bad magic, expected "TRC\\0" but found ' + hexBytes(frameStart, 4), frameStart, curFile);
              throw new DecodeError('bad stream header after a frame boundary', frameStart, curFile);
            }
          }
          p += 4;
          const version = u8();
          if (version !== 1) throw new DecodeError('unsupported trace format version ' + version + ' (this viewer reads version 1)', p - 1, curFile);
          endStream(false);
          st = newStream(frameStart);
          counts.streams++;
          fileInfo.streams++;
          continue;
        }
        p++;
        switch (tag) {
          case FRAME_EVENT: readEvent(frameStart); break;
          case FRAME_STRING_POOL: readStringPool(); break;
          case FRAME_TIMESTAMP_RESET: readReset(); break;
          case FRAME_STACK_POOL: readStackPool(); break;
          case FRAME_SCHEMA: readSchema(frameStart); break;
          case FRAME_ANNOTATIONS: readAnnotations(); break;
          default:
            throw new DecodeError('unknown frame tag 0x' + tag.toString(16).padStart(2, '0') + ' (corrupt data, or a newer format)', frameStart, curFile);
        }
        if (p >= nextProgress) {
          nextProgress = p + (1 << 20);
          if (opts.onProgress) opts.onProgress(bytesBefore + p, bytesTotal);
        }
      }
      endStream(false);
    } catch (e) {
      if (e !== TRUNCATED) {
        if (e instanceof DecodeError) throw e;
        if (e instanceof RangeError) throw new DecodeError('corrupt data: ' + e.message, frameStart, curFile);
        throw e;
      }
      const what = frameStart === 0 ? 'inside the stream header' : 'in the middle of a frame (tag 0x' + buf[frameStart].toString(16).padStart(2, '0') + ')';
      const note = (name ? name + ': ' : '') + 'the data ends ' + what + ' at byte ' + frameStart + ' of ' + end +
        '; the last ' + (end - frameStart) + ' bytes were ignored (a file cut short, e.g. by a crash)';
      fileInfo.truncated = true;
      fileInfo.truncatedAt = frameStart;
      fileInfo.notes.push(note);
      endStream(true);
    }
  }

  function hexBytes(at, n) {
    const out = [];
    for (let i = at; i < Math.min(end, at + n); i++) out.push(buf[i].toString(16).padStart(2, '0'));
    return out.join(' ') || '(nothing)';
  }

  let bytesBefore = 0;
  let bytesTotal = 0;

  /* ---------- after the frames: pair edges into spans, sort ---------- */

  /* Indices 0..n-1 grouped by worker (ascending), stable (file order) within a worker. */
  function groupByWorker(worker, n) {
    // Worker ids are small integers in practice: count them in an array, others in a Map.
    const SMALL = 4096;
    const small = new Int32Array(SMALL);
    const big = new Map();
    for (let i = 0; i < n; i++) {
      const w = worker[i];
      if (w >= 0 && w < SMALL && w === (w | 0)) small[w]++;
      else big.set(w, (big.get(w) || 0) + 1);
    }
    const keys = [];
    for (let w = 0; w < SMALL; w++) if (small[w]) keys.push(w);
    for (const k of big.keys()) keys.push(k);
    keys.sort((x, y) => (x - y) || (Number.isNaN(x) ? 1 : 0) - (Number.isNaN(y) ? 1 : 0));
    const groups = [];
    const nextSmall = new Int32Array(SMALL);
    const nextBig = new Map();
    let acc = 0;
    for (const k of keys) {
      const cnt = k >= 0 && k < SMALL && k === (k | 0) ? small[k] : big.get(k);
      groups.push({ worker: k, from: acc, to: acc + cnt });
      if (k >= 0 && k < SMALL && k === (k | 0)) nextSmall[k] = acc;
      else nextBig.set(k, acc);
      acc += cnt;
    }
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const w = worker[i];
      if (w >= 0 && w < SMALL && w === (w | 0)) order[nextSmall[w]++] = i;
      else {
        const at = nextBig.get(w);
        order[at] = i;
        nextBig.set(w, at + 1);
      }
    }
    return { order, groups };
  }

  /*
   * Sort order[from,to) by ts, stable (file order on ties). Data is made of streams that are
   * each in time order, so a natural merge sort (merging the ascending runs) is close to linear.
   */
  function sortRangeByTs(order, from, to, ts) {
    const runs = [from];
    for (let i = from + 1; i < to; i++) if (ts[order[i]] < ts[order[i - 1]]) runs.push(i);
    if (runs.length === 1) return;
    runs.push(to);
    let src = order.slice(from, to);
    let dst = new Uint32Array(to - from);
    let bounds = runs.map((r) => r - from);
    while (bounds.length > 2) {
      const next = [0];
      for (let r = 0; r + 1 < bounds.length; r += 2) {
        const lo = bounds[r];
        const mid = bounds[r + 1];
        const hi = r + 2 < bounds.length ? bounds[r + 2] : mid;
        let i = lo;
        let j = mid;
        let k = lo;
        while (i < mid && j < hi) {
          if (ts[src[j]] < ts[src[i]]) dst[k++] = src[j++];
          else dst[k++] = src[i++];
        }
        while (i < mid) dst[k++] = src[i++];
        while (j < hi) dst[k++] = src[j++];
        next.push(hi);
      }
      if (next[next.length - 1] !== bounds[bounds.length - 1]) next.push(bounds[bounds.length - 1]);
      bounds = next;
      const tmp = src;
      src = dst;
      dst = tmp;
    }
    order.set(src, from);
  }

  /* Each start with the next end of the same worker (time-sorted): polls and parks alike. */
  function pairSpans(edges, extra) {
    const n = edges.count;
    const { order, groups } = groupByWorker(edges.worker, n);
    for (const g of groups) sortRangeByTs(order, g.from, g.to, edges.ts);
    const out = {};
    const spec = Object.assign({ start: Float64Array, end: Float64Array, worker: Float64Array }, extra.spec);
    for (const k in spec) out[k] = new spec[k](Math.ceil(n / 2) + 1);
    let m = 0;
    let unmatchedStarts = 0;
    let unmatchedEnds = 0;
    const isEnd = edges.isEnd;
    const ts = edges.ts;
    for (const g of groups) {
      let pending = -1;
      let latest = -1; // the worker's latest closed pair, for a PollCpuEvent (isEnd 2)
      for (let k = g.from; k < g.to; k++) {
        const i = order[k];
        if (isEnd[i] === 2) { // its worker's latest closed poll's, once (as the C readers take it)
          if (latest >= 0 && extra.cpu) extra.cpu(out, latest, i);
          latest = -1;
        } else if (isEnd[i] === 0) {
          if (pending >= 0) unmatchedStarts++;
          pending = i;
        } else if (pending >= 0) {
          if (m >= out.start.length) break; // cannot happen: at most n/2 pairs
          out.start[m] = ts[pending];
          out.end[m] = ts[i];
          out.worker[m] = g.worker;
          extra.fill(out, m, pending, i);
          latest = m;
          m++;
          pending = -1;
        } else {
          unmatchedEnds++;
        }
      }
      if (pending >= 0) unmatchedStarts++;
    }
    const res = { count: m };
    for (const k in out) res[k] = out[k].slice(0, m);
    res.unmatchedStarts = unmatchedStarts;
    res.unmatchedEnds = unmatchedEnds;
    return res;
  }

  function finishPolls(edges) {
    const c = edges;
    return pairSpans(c, {
      // cpuEvent: what its PollCpuEvent said (0 none, 1 exact: cpuNs is its CPU time, 2 not
      // exact), for viewer/src/attribution.js's rule of a long poll's CPU time
      spec: { task: Float64Array, loc: Int32Array, localQueue: Float64Array, cpuEvent: Uint8Array, cpuNs: Float64Array },
      fill(out, m, s) {
        out.task[m] = c.task[s];
        out.loc[m] = c.loc[s];
        out.localQueue[m] = c.localQueue[s];
      },
      cpu(out, m, e) {
        const exact = Number.isFinite(c.cpu[e]);
        out.cpuEvent[m] = exact ? 1 : 2;
        out.cpuNs[m] = exact ? c.cpu[e] : 0;
      },
    });
  }

  function finishParks(edges) {
    const c = edges;
    return pairSpans(c, {
      spec: { schedWait: Float64Array, cpuAtPark: Float64Array, cpuAtUnpark: Float64Array, tid: Float64Array, localQueue: Float64Array },
      fill(out, m, s, e) {
        out.schedWait[m] = c.schedWait[e];
        out.cpuAtPark[m] = c.cpuTime[s];
        out.cpuAtUnpark[m] = c.cpuTime[e];
        out.tid[m] = c.tid[s];
        out.localQueue[m] = c.localQueue[e];
      },
    });
  }

  /* Reorder every column of a table by `order`. */
  function permute(tab, order) {
    const out = { count: tab.count };
    for (const k in tab) {
      if (k === 'count') continue;
      const src = tab[k];
      const dst = new src.constructor(order.length);
      for (let i = 0; i < order.length; i++) dst[i] = src[order[i]];
      out[k] = dst;
    }
    return out;
  }

  function sortedByTs(tab) {
    const order = new Uint32Array(tab.count);
    for (let i = 0; i < order.length; i++) order[i] = i;
    let sorted = true;
    for (let i = 1; i < order.length; i++) if (tab.ts[i] < tab.ts[i - 1]) { sorted = false; break; }
    if (sorted) return tab;
    sortRangeByTs(order, 0, order.length, tab.ts);
    return permute(tab, order);
  }

  function sortedByWorkerTs(tab) {
    const { order, groups } = groupByWorker(tab.worker, tab.count);
    for (const g of groups) sortRangeByTs(order, g.from, g.to, tab.ts);
    return permute(tab, order);
  }

  // Every metadata event's runtime.<name> lists, merged: a segment repeats the metadata when a
  // worker registers after it started, and each segment lists the workers known at its start.
  function runtimesFrom(metaList, workers) {
    const runtimes = [];
    const byName = new Map();
    for (const m of metaList) {
      for (const [k, v] of m.entries) {
        if (typeof k !== 'string' || !k.startsWith('runtime.')) continue;
        const name = k.slice('runtime.'.length);
        let r = byName.get(name);
        if (!r) {
          r = { name, workers: [] };
          byName.set(name, r);
          runtimes.push(r);
        }
        const ids = String(v).split(',').map((x) => x.trim()).filter((x) => x !== '').map(Number).filter((x) => Number.isFinite(x));
        for (const id of ids) if (!r.workers.includes(id)) r.workers.push(id);
      }
    }
    const placed = new Set();
    for (const r of runtimes) for (const w of r.workers) placed.add(w);
    const rest = workers.filter((w) => !placed.has(w));
    if (rest.length) runtimes.push({ name: runtimes.length ? 'other' : '', workers: rest });
    return runtimes;
  }

  /* ---------- public entry points ---------- */

  /*
   * decode(input, options) -> trace
   *   input: Uint8Array | ArrayBuffer | [{name, bytes}] (several files, e.g. segments; each holds
   *          whole streams). Data must already be decompressed (see decodeAsync for gzip).
   *   options.onProgress(bytesDone, bytesTotal), options.maxOtherRows (rows kept per unknown schema)
   * Throws DecodeError (with .offset, .file, .partial) on invalid data. A truncated final frame
   * is not an error: decoding stops there and trace.notes says so.
   */
  function decode(input, options) {
    opts = Object.assign({ maxOtherRows: 1000, onProgress: null }, options || {});
    const files = normalizeInput(input);
    utf8 = new TextDecoder('utf-8');
    strings = [];
    stringIds = new Map();
    stacks = [];
    stackIds = new Map();
    truncatedStacks = new Set();
    counts = {
      streams: 0, schemaFrames: 0, resetFrames: 0, stringPoolFrames: 0, stackPoolFrames: 0,
      annotationFrames: 0, events: 0, byName: {},
    };
    tables = {
      pollEdges: makeTable({ ts: Float64Array, worker: Float64Array, task: Float64Array, loc: Int32Array, localQueue: Float64Array, isEnd: Uint8Array, cpu: Float64Array }),
      parkEdges: makeTable({ ts: Float64Array, worker: Float64Array, localQueue: Float64Array, cpuTime: Float64Array, schedWait: Float64Array, tid: Float64Array, isEnd: Uint8Array }),
      wakes: makeTable({ ts: Float64Array, waker: Float64Array, woken: Float64Array, targetWorker: Float64Array }),
      // worker: the sample's worker by the model's rule (noteThreadWorker); recordWorker: the
      // record's own worker_id field
      cpuSamples: makeTable({ ts: Float64Array, worker: Float64Array, recordWorker: Float64Array, tid: Float64Array, source: Float64Array, threadName: Int32Array, stack: Int32Array, cpu: Float64Array, seq: Float64Array }),
      taskDumps: makeTable({ ts: Float64Array, task: Float64Array, stack: Int32Array }),
      queueSamples: makeTable({ ts: Float64Array, value: Float64Array }),
      spawns: makeTable({ ts: Float64Array, task: Float64Array, loc: Int32Array, instrumented: Float64Array }),
      terminates: makeTable({ ts: Float64Array, task: Float64Array }),
      // seq: the event's place in the data (the C model reads heap events in that order);
      // meta: how many SegmentMetadataEvents came before it (the sampling rate then)
      heapAllocs: makeTable({ ts: Float64Array, seq: Float64Array, meta: Int32Array, tid: Float64Array, size: Float64Array, addrLo: Uint32Array, addrHi: Uint32Array, stack: Int32Array }),
      heapFrees: makeTable({ ts: Float64Array, seq: Float64Array, meta: Int32Array, tid: Float64Array, size: Float64Array, addrLo: Uint32Array, addrHi: Uint32Array }),
      symbols: makeTable({ addrLo: Uint32Array, addrHi: Uint32Array, size: Float64Array, name: Int32Array, inlineDepth: Float64Array, file: Int32Array, line: Float64Array }),
      switches: makeTable({ ts: Float64Array, tid: Float64Array, worker: Float64Array, out: Uint8Array, preempted: Uint8Array, seq: Float64Array }),
      // the worker a park, unpark or WorkerRegisteredEvent names for its thread, in file order
      // (seq: the event's place in the data): whose worker a thread's switch records are
      // (attribution.js)
      threadWorkers: makeTable({ seq: Float64Array, tid: Float64Array, worker: Float64Array }),
      drops: makeTable({ ts: Float64Array, worker: Float64Array, tid: Float64Array, lost: Float64Array }),
    };
    other = {};
    tidWorker = new Map();
    meta = [];
    clocks = [];
    coverage = [];
    spanMarks = [];
    schemasByName = new Map();
    originHi = 0;
    originLo = 0;
    originSet = false;
    zeroRel = 0;
    tMin = Infinity;
    tMax = -Infinity;
    bytesBefore = 0;
    bytesTotal = files.reduce((a, f) => a + f.bytes.length, 0);

    const fileInfos = [];
    try {
      for (const f of files) {
        const info = { name: f.name, bytes: f.bytes.length, streams: 0, truncated: false, notes: [] };
        fileInfos.push(info);
        decodeFile(f.bytes, f.name, info);
        bytesBefore += f.bytes.length;
      }
    } catch (e) {
      if (e instanceof DecodeError) {
        try {
          e.partial = finish(fileInfos);
        } catch (_) {
          e.partial = null;
        }
      }
      release();
      throw e;
    }
    const trace = finish(fileInfos);
    release();
    return trace;
  }

  function release() {
    buf = null;
    st = null;
    tables = null;
  }

  function normalizeInput(input) {
    const one = (x, name) => {
      let bytes = x;
      if (x instanceof ArrayBuffer) bytes = new Uint8Array(x);
      else if (ArrayBuffer.isView(x) && !(x instanceof Uint8Array)) bytes = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
      if (!(bytes instanceof Uint8Array)) throw new TypeError('decode: expected bytes (Uint8Array or ArrayBuffer)');
      return { name: name || '', bytes };
    };
    if (Array.isArray(input)) return input.map((f, i) => (f && f.bytes !== undefined ? one(f.bytes, f.name) : one(f, 'file ' + (i + 1))));
    return [one(input, '')];
  }

  function finish(fileInfos) {
    for (let i = 0; i < strings.length; i++) if (strings[i] === null) strings[i] = '<undefined string>';
    for (let i = 0; i < stacks.length; i++) if (stacks[i] === null) stacks[i] = new Uint32Array(0);
    const raw = {};
    for (const k in tables) raw[k] = trim(tables[k]);
    const polls = finishPolls(raw.pollEdges);
    const parks = finishParks(raw.parkEdges);
    const workerSet = new Set();
    for (let i = 0; i < polls.count; i++) workerSet.add(polls.worker[i]);
    for (let i = 0; i < parks.count; i++) workerSet.add(parks.worker[i]);
    const workers = Array.from(workerSet).sort((a, b) => a - b);
    const notes = [];
    for (const f of fileInfos) for (const n of f.notes) notes.push(n);
    if (polls.unmatchedStarts || polls.unmatchedEnds) {
      notes.push(polls.unmatchedStarts + ' poll starts without an end and ' + polls.unmatchedEnds + ' poll ends without a start were left out');
    }
    const originText = (BigInt(originHi) * 4294967296n + BigInt(originLo)).toString();
    return {
      format: 'dial9 trace v1',
      files: fileInfos,
      truncated: fileInfos.some((f) => f.truncated),
      notes,
      counts,
      origin: originText, // absolute CLOCK_MONOTONIC ns of relative time 0 (decimal string)
      timeStart: tMin === Infinity ? 0 : tMin, // relative ns
      timeEnd: tMax === -Infinity ? 0 : tMax,
      strings,
      stacks,
      truncatedStacks: Array.from(truncatedStacks).sort((a, b) => a - b), // ids, ascending
      polls,
      parks,
      wakes: sortedByTs(raw.wakes),
      cpuSamples: sortedByWorkerTs(raw.cpuSamples),
      taskDumps: sortedByTs(raw.taskDumps),
      queueSamples: sortedByTs(raw.queueSamples),
      spawns: raw.spawns,
      terminates: raw.terminates,
      symbols: raw.symbols,
      heapAllocs: raw.heapAllocs, // in the data's order (viewer/src/heap.js)
      heapFrees: raw.heapFrees,
      switches: raw.switches, // SchedSwitchEvent in file order: {ts, tid, worker, out, preempted, seq}
      threadWorkers: raw.threadWorkers, // {seq, tid, worker} of parks, unparks and registrations, in file order
      drops: raw.drops, // DroppedEventsEvent in file order: {ts, worker, tid, lost (its count)}
      metadata: meta,
      clockSyncs: clocks,
      spanMarks: spanMarks.map((m) => ({
        ts: m.ts, enter: m.enter, worker: m.worker, id: m.id, task: m.task, tid: m.tid,
        name: m.nameText !== null ? m.nameText : strings[m.name] || '',
      })),
      coverage: coverage.map((c) => ({ ts: c.ts, source: strings[c.source] || '', mode: strings[c.mode] || '', oneIn: c.oneIn })),
      schemas: Array.from(schemasByName.values()),
      other,
      workers,
      runtimes: runtimesFrom(meta, workers),
    };
  }

  /* The typed-array buffers of a trace, to transfer it from a Worker without copying. */
  function transferables(trace) {
    const out = [];
    const add = (tab) => {
      for (const k in tab) if (ArrayBuffer.isView(tab[k])) out.push(tab[k].buffer);
    };
    for (const k of ['polls', 'parks', 'wakes', 'cpuSamples', 'taskDumps', 'queueSamples', 'spawns', 'terminates', 'symbols', 'heapAllocs', 'heapFrees', 'switches', 'threadWorkers', 'drops']) add(trace[k]);
    for (const s of trace.stacks) out.push(s.buffer);
    return out;
  }

  function isGzip(bytes) {
    return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  }

  /* gzip → bytes; DecompressionStream in browsers and workers, zlib in node. */
  async function gunzip(bytes) {
    if (typeof DecompressionStream === 'function' && typeof Response === 'function') {
      try {
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
        return new Uint8Array(await new Response(stream).arrayBuffer());
      } catch (e) {
        throw new DecodeError('gzip data is corrupt or cut short: ' + (e && e.message ? e.message : e), 0, '');
      }
    }
    const zlib = await import('node:zlib');
    try {
      return new Uint8Array(zlib.gunzipSync(bytes));
    } catch (e) {
      throw new DecodeError('gzip data is corrupt or cut short: ' + e.message, 0, '');
    }
  }

  /* Like decode, but each file may be gzip-compressed (detected by its magic 1f 8b). */
  async function decodeAsync(input, options) {
    const files = normalizeInput(input);
    const plain = [];
    for (const f of files) {
      if (isGzip(f.bytes)) {
        let bytes;
        try {
          bytes = await gunzip(f.bytes);
        } catch (e) {
          if (e instanceof DecodeError) throw new DecodeError((f.name ? f.name + ': ' : '') + e.message.replace(/ \(at byte 0\)$/, ''), -1, f.name);
          throw e;
        }
        plain.push({ name: f.name, bytes });
      } else {
        plain.push(f);
      }
    }
    return decode(plain, options);
  }

  /* Canonical hex of a 64-bit address given as (lo, hi) words, the same text as BigInt#toString(16). */
  function addrHex(lo, hi) {
    if (hi === 0) return lo.toString(16);
    return hi.toString(16) + lo.toString(16).padStart(8, '0');
  }

  return {
    decode, decodeAsync, gunzip, isGzip, transferables, addrHex, DecodeError,
    FIELD_TYPES: T, OPTIONAL, typeName,
  };
}

if (typeof module === 'object' && module && module.exports) {
  module.exports = dial9DecoderFactory();
} else if (typeof self !== 'undefined') {
  self.Dial9Decoder = dial9DecoderFactory();
}
