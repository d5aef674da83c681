/* Number and time formatting shared by the viewer's panels and canvases. */
(function (D9) {
  'use strict';

  const UNITS = [
    [1e9, 's'],
    [1e6, 'ms'],
    [1e3, 'µs'],
    [1, 'ns'],
  ];

  /* A duration in ns, with 3–4 significant digits: "50.28 ms", "812 ns". */
  function duration(ns) {
    if (!Number.isFinite(ns)) return '–';
    const a = Math.abs(ns);
    if (a === 0) return '0 ns';
    for (const [div, unit] of UNITS) {
      if (a >= div || div === 1) {
        const v = ns / div;
        const digits = Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 10 ? 2 : 3;
        return (div === 1 ? String(Math.round(v)) : v.toFixed(digits)) + ' ' + unit;
      }
    }
    return ns + ' ns';
  }

  const TIME_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];

  function withUnit(ns, div, unit, step) {
    const sign = ns < 0 ? '−' : '';
    const dec = div === 1 ? 0 : Math.max(0, Math.min(9, Math.ceil(Math.log10(div / Math.max(step, 1e-9)) - 1e-9)));
    return sign + (Math.abs(ns) / div).toFixed(dec) + ' ' + unit;
  }

  /* A time in the unit its size calls for, precise to about `step` ns: "3.907 s", "812.5 µs". */
  function relTime(ns, step) {
    const a = Math.abs(ns);
    if (a === 0) return axisTime(0, step || 1); // "0 ms" at a 1 ms step, not "0 ns"
    for (const [div, unit] of TIME_UNITS) {
      if (a >= div || div === 1) return withUnit(ns, div, unit, Math.min(step || 1, div));
    }
    return ns + ' ns';
  }

  /* A signed offset from the start of the trace: "+3.907 s", "−48 ms" (before the start). */
  function offset(ns, step) {
    return (ns < 0 ? '' : '+') + relTime(ns, step);
  }

  /* Axis labels: one unit for every tick, chosen by the tick spacing. */
  function axisTime(ns, step) {
    for (const [div, unit] of TIME_UNITS) {
      if (step >= div / 10 || div === 1) return withUnit(ns, div, unit, step);
    }
    return ns + ' ns';
  }

  /* "1 234 567": grouped digits read well in dense panels. */
  function count(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009');
  }

  function pad(n, w) {
    return String(n).padStart(w, '0');
  }

  /*
   * Absolute time. With a ClockSyncEvent the wall clock (UTC) is known: it is kept as whole
   * seconds plus nanoseconds so that it stays exact (1.7e18 ns does not fit a double).
   * Without one, the CLOCK_MONOTONIC value is shown.
   */
  function makeClock(trace) {
    const origin = BigInt(trace.origin || '0');
    let wallSec = null;
    let wallFrac = 0;
    const sync = (trace.clockSyncs || []).find((c) => c.realtimeNs);
    if (sync) {
      const wallAt0 = BigInt(sync.realtimeNs) - BigInt(Math.round(sync.ts));
      wallSec = Number(wallAt0 / 1000000000n);
      wallFrac = Number(wallAt0 % 1000000000n);
    }
    const monoSec = Number(origin / 1000000000n);
    const monoFrac = Number(origin % 1000000000n);
    function split(sec, frac, t) {
      const total = frac + Math.round(t);
      const carry = Math.floor(total / 1e9);
      return [sec + carry, total - carry * 1e9];
    }
    return {
      hasWall: wallSec !== null,
      /* Full text: "2026-05-15 18:35:10.078 081 994 UTC" or "503226.032 430 072 s (monotonic)". */
      absolute(t) {
        if (wallSec !== null) {
          const [s, ns] = split(wallSec, wallFrac, t);
          const d = new Date(s * 1000);
          return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1, 2) + '-' + pad(d.getUTCDate(), 2) + ' ' +
            pad(d.getUTCHours(), 2) + ':' + pad(d.getUTCMinutes(), 2) + ':' + pad(d.getUTCSeconds(), 2) + '.' +
            groupNanos(ns) + ' UTC';
        }
        const [s, ns] = split(monoSec, monoFrac, t);
        return s + '.' + groupNanos(ns) + ' s (monotonic)';
      },
      /* Axis label: only the digits that matter at this tick spacing. */
      absoluteTick(t, step) {
        const decimals = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step / 1e9) - 1e-9)));
        let s;
        let ns;
        if (wallSec !== null) [s, ns] = split(wallSec, wallFrac, t);
        else [s, ns] = split(monoSec, monoFrac, t);
        const fracText = decimals ? '.' + groupNanos(ns).replace(/\u2009/g, '').slice(0, decimals) : '';
        if (wallSec !== null) {
          const d = new Date(s * 1000);
          return pad(d.getUTCHours(), 2) + ':' + pad(d.getUTCMinutes(), 2) + ':' + pad(d.getUTCSeconds(), 2) + fracText;
        }
        return s + fracText + ' s';
      },
      /* (absolute time at relative 0) mod step: shifts axis ticks onto round clock values. */
      phase(step) {
        const sec = wallSec !== null ? wallSec : monoSec;
        const frac = wallSec !== null ? wallFrac : monoFrac;
        if (step <= 1e9) return frac % step;
        const stepSec = Math.round(step / 1e9);
        return ((sec % stepSec) * 1e9 + frac) % step;
      },
      /* Absolute monotonic nanoseconds as exact decimal text. */
      monotonic(t) {
        return (origin + BigInt(Math.round(t))).toString();
      },
    };
  }

  function groupNanos(ns) {
    const s = pad(ns, 9);
    return s.slice(0, 3) + '\u2009' + s.slice(3, 6) + '\u2009' + s.slice(6);
  }

  /* "src/very/long/path/file.rs:173:32" → "file.rs:173:32" for narrow places. */
  function shortLocation(loc) {
    if (!loc) return '';
    const i = loc.lastIndexOf('/');
    return i >= 0 ? loc.slice(i + 1) : loc;
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }

  function bytes(n) {
    if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + ' GiB';
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + ' KiB';
    return n + ' B';
  }

  /* A task id as dial9 shows it: hex ("0x1a3"). */
  function taskId(id) {
    return Number.isFinite(id) && id >= 0 ? '0x' + id.toString(16) : String(id);
  }

  D9.format = { duration, relTime, offset, axisTime, count, makeClock, shortLocation, escapeHtml, bytes, taskId };
})(window.D9 = window.D9 || {});
