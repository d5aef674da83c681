// The poll slices of `dial9 export --format perfetto` with their attribution arguments, read
// from the protobuf (a reader of the few messages the export writes, src/export/export_perfetto.c:
// TracePacket {timestamp 8, track_event 11, interned_data 12}, TrackEvent {debug_annotations 4,
// type 9}, DebugAnnotation {name_iid 1, uint_value 3}, InternedData {debug_annotation_names 3}).
// -> [{ts (absolute ns, decimal text), task (its task_id argument), parts: {on_cpu_ns: ...}}]

function* fields(buf, from = 0, to = buf.length) {
  let p = from;
  const varint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[p++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  };
  while (p < to) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, value: varint() };
    else if (wire === 1) { yield { no, fixed: buf.subarray(p, p + 8) }; p += 8; }
    else if (wire === 5) { yield { no, fixed: buf.subarray(p, p + 4) }; p += 4; }
    else if (wire === 2) {
      const len = Number(varint());
      yield { no, from: p, to: p + len };
      p += len;
    } else throw new Error('perfetto reader: wire type ' + wire + ' at ' + p);
  }
}

export function perfettoPolls(buf) {
  const names = new Map(); // debug annotation name iid -> name
  const polls = [];
  for (const pkt of fields(buf)) {
    if (pkt.no !== 1) continue;
    let ts = null;
    let te = null;
    for (const f of fields(buf, pkt.from, pkt.to)) {
      if (f.no === 8) ts = f.value;
      else if (f.no === 11) te = f;
      else if (f.no === 12) {
        for (const d of fields(buf, f.from, f.to)) {
          if (d.no !== 3) continue;
          let iid = null;
          let name = '';
          for (const x of fields(buf, d.from, d.to)) {
            if (x.no === 1) iid = x.value;
            else if (x.no === 2) name = new TextDecoder().decode(buf.subarray(x.from, x.to));
          }
          names.set(iid, name);
        }
      }
    }
    if (!te) continue;
    let type = 0n;
    const args = {};
    for (const f of fields(buf, te.from, te.to)) {
      if (f.no === 9) type = f.value;
      else if (f.no === 4) {
        let iid = null;
        let value = null;
        for (const x of fields(buf, f.from, f.to)) {
          if (x.no === 1) iid = x.value;
          else if (x.no === 3) value = x.value;
        }
        if (value !== null) args[names.get(iid)] = Number(value);
      }
    }
    if (type !== 1n || !('task_id' in args) || !('local_queue' in args)) continue; // a poll's slice begin
    const parts = {};
    for (const [k, v] of Object.entries(args)) if (k.endsWith('_ns')) parts[k] = v;
    polls.push({ ts: String(ts), task: args.task_id, parts });
  }
  return polls;
}
