/*
 * Flame graphs of the stacks sampled in the visible time range: CPU samples (source 0) or
 * off-CPU / context-switch samples (source 1), optionally only those taken inside polls of one
 * spawn location. Drawn as an icicle (root on top) of absolutely placed boxes: a trace holds at
 * most a few tens of thousands of distinct frames, and boxes narrower than a pixel are merged.
 */
(function (D9) {
  'use strict';

  const M = D9.model;
  const F = D9.format;
  const esc = F.escapeHtml;
  const ROW_H = 18;
  const TRUNCATED_ROOT = '[callers not recorded]';

  function frameLabels(f) {
    // names: innermost inline frame first; the flame graph goes outermost → innermost.
    if (!f.names || !f.names.length) return [f.addr];
    const out = [];
    for (let k = f.names.length - 1; k >= 0; k--) out.push(f.names[k].name || f.addr);
    return out;
  }

  /* The tree of stacks: {name, value, children: Map}. Samples outside [t0, t1], of the other
   * kind, or (with `location`) not inside a poll of that spawn location are left out. */
  function build(model, t0, t1, kind, location) {
    const tr = model.trace;
    const S = tr.cpuSamples;
    const P = tr.polls;
    const wantSource = kind === 'offcpu' ? 1 : 0;
    const root = { name: kind === 'offcpu' ? 'all off-CPU samples' : 'all CPU samples', value: 0, children: new Map() };
    const cache = new Map(); // stack id -> labels, root first
    for (let s = 0; s < S.count; s++) {
      const t = S.ts[s];
      if (t < t0 || t > t1 || S.source[s] !== wantSource) continue;
      if (location) {
        const lane = model.laneOf.get(S.worker[s]);
        const i = lane ? M.spanAt(P, lane.polls, t, 0) : -1;
        if (i < 0 || tr.strings[P.loc[i]] !== location) continue;
      }
      let labels = cache.get(S.stack[s]);
      if (!labels) {
        const frames = S.stack[s] >= 0 ? M.stackFrames(model, S.stack[s]) : [];
        labels = [];
        // stacks whose callers were not recorded grow from one box of their own, not as roots
        // that look like the threads' outermost functions
        if (frames.length && M.stackTruncated(model, S.stack[s])) labels.push(TRUNCATED_ROOT);
        for (let k = frames.length - 1; k >= 0; k--) labels.push(...frameLabels(frames[k]));
        cache.set(S.stack[s], labels);
      }
      root.value++;
      let node = root;
      for (const name of labels) {
        let child = node.children.get(name);
        if (!child) {
          child = { name, value: 0, children: new Map() };
          node.children.set(name, child);
        }
        child.value++;
        node = child;
      }
    }
    return root;
  }

  /* Spawn locations of the polls that contain samples of this kind in the range (for the filter). */
  function locations(model, t0, t1, kind) {
    const tr = model.trace;
    const S = tr.cpuSamples;
    const P = tr.polls;
    const wantSource = kind === 'offcpu' ? 1 : 0;
    const counts = new Map();
    for (let s = 0; s < S.count; s++) {
      if (S.ts[s] < t0 || S.ts[s] > t1 || S.source[s] !== wantSource) continue;
      const lane = model.laneOf.get(S.worker[s]);
      const i = lane ? M.spanAt(P, lane.polls, S.ts[s], 0) : -1;
      if (i < 0) continue;
      const loc = tr.strings[P.loc[i]] || '';
      counts.set(loc, (counts.get(loc) || 0) + 1);
    }
    return Array.from(counts.entries()).sort((a, b) => b[1] - a[1]);
  }

  /* HTML boxes for the tree under `focus` (the whole tree by default), widths in % of it;
   * `valueText` says a node's value (default: "N samples"; the heap's graphs give bytes). */
  function render(root, focus, widthPx, valueText) {
    const says = valueText || ((v) => v + ' samples');
    const top = focus || root;
    const boxes = [];
    const nodes = []; // nodes[i] is the node of the box with data-i="i"
    let depth = 0;
    const minFrac = 1 / Math.max(1, widthPx);
    (function walk(node, left, d) {
      const frac = node.value / Math.max(1, top.value);
      if (frac < minFrac) return;
      depth = Math.max(depth, d);
      const hue = node === top ? 220 : 10 + (hash(node.name) % 40);
      boxes.push('<div class="fg-box" data-i="' + nodes.length + '" data-depth="' + d + '" style="left:' + (left * 100).toFixed(4) + '%;width:' +
        (frac * 100).toFixed(4) + '%;top:' + d * ROW_H + 'px;background:hsl(' + hue + ',70%,' + (node === top ? 35 : 48) + '%)"' +
        ' title="' + esc(node.name) + ' — ' + esc(says(node.value)) + ' (' + (frac * 100).toFixed(1) + ' %)">' +
        esc(node.name) + '</div>');
      nodes.push(node);
      let x = left;
      const kids = Array.from(node.children.values()).sort((a, b) => b.value - a.value);
      for (const c of kids) {
        walk(c, x, d + 1);
        x += c.value / Math.max(1, top.value);
      }
    })(top, 0, 0);
    return { html: boxes.join(''), height: (depth + 1) * ROW_H, boxes: boxes.length, nodes };
  }

  function hash(s) {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return Math.abs(h);
  }

  D9.flamegraph = { build, locations, render, frameLabels, ROW_H };
})(window.D9 = window.D9 || {});
