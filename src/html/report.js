/* report.js: the script of the page `opperf report` writes (embedded by cmake/embed_text.cmake).
 * Reads the data block (JSON written by src/report_html.c) and draws: the context block, the
 * sortable and filterable table of cases, a case's detail on click (the operator's roofline
 * against the ceilings the run recorded, counters with their statuses, top-down, peer, trend),
 * the sweep plots, and the trends and regressions across runs. Plain DOM and inline SVG: no
 * library, no network. Keep this file ASCII and free of a closing script tag. */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('opperf-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';
  var MICRO = '\u00b5';
  var main = document.getElementById('main');
  var nav = document.getElementById('nav');

  /* ---- DOM helpers: text always goes in as text nodes, never as markup ---- */
  function el(tag, attrs, kids, ns) {
    var e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] === undefined || attrs[k] === null || attrs[k] === false) continue;
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'onclick') e.addEventListener('click', attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    });
    return e;
  }
  function h(tag, attrs, kids) { return el(tag, attrs, kids); }
  function s(tag, attrs, kids) { return el(tag, attrs, kids, SVGNS); }
  function section(id, title) {
    var sec = h('section', {id: id}, [h('h2', {text: title})]);
    main.appendChild(sec);
    nav.appendChild(h('a', {href: '#' + id, text: title}));
    return sec;
  }

  /* ---- number formatting ---- */
  function fmtTime(v) {
    if (!(v > 0)) return '-';
    if (v < 1e-6) return (v * 1e9).toFixed(1) + ' ns';
    if (v < 1e-3) return (v * 1e6).toFixed(2) + ' ' + MICRO + 's';
    if (v < 1) return (v * 1e3).toFixed(2) + ' ms';
    return v.toFixed(3) + ' s';
  }
  function sig(v, n) {
    if (v === undefined || v === null || !isFinite(v)) return '-';
    if (v === 0) return '0';
    var a = Math.abs(v);
    if (a >= 1e6 || a < 1e-3) return v.toExponential(n - 1).replace('e+', 'e');
    return String(Number(v.toPrecision(n)));
  }
  function fmtBytes(b) {
    if (!(b >= 0)) return '-';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(b < 10 ? 2 : 1) : String(b)) + ' ' + u[i];
  }
  function fmtRate(v, unit) {
    if (!(v > 0)) return '-';
    var p = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (var i = 0; i < p.length; i++) if (v >= p[i][0]) return sig(v / p[i][0], 3) + ' ' + p[i][1] + unit;
    return sig(v, 3) + ' ' + unit;
  }

  var run = D.run || null;
  var ctx = run ? run.context || {} : {};
  var cases = run ? run.cases : [];
  var settings = ctx.settings || {};
  /* Strings that repeat across cases come as indexes into run.strings (src/report_html.c). */
  var STR = run ? run.strings || [] : [], TD_MODELS = run ? run.td_models || {} : {};
  function str(i) { return typeof i === 'number' ? STR[i] : i === null ? undefined : i; }
  cases.forEach(function (c) {
    if (c.ctr) c.ctr = c.ctr.map(function (a) {
      return {name: str(a[0]), status: str(a[1]), v: a[2] === null ? undefined : a[2], run: a[3] === null ? undefined : a[3],
              reason: str(a[4]), priv: str(a[5])};
    });
    if (c.td) ['model', 'reason', 'verdict', 'level2_absent', 'privilege'].forEach(function (k) { if (k in c.td) c.td[k] = str(c.td[k]); });
  });
  document.title = D.title || 'opperf report';
  document.getElementById('title').textContent = D.title || 'opperf report';

  function caseThreads(c) { return c.threads || settings.threads || ctx.omp_threads || null; }
  function caseShape(c) { return c.spec + (c.params ? ' ' + c.params : ''); }
  function caseLabel(c) { return c.op + ' ' + c.dtype + ' ' + c.pass + ' ' + caseShape(c); }
  function gflops(c) { return c.m && c.m.gflops; }
  function gbps(c) { return c.m && c.m.gbps; }
  function roofPct(c) { return c.m && c.m.roofline_pct; }
  function median(c) { return c.t ? c.t[0] : undefined; }
  function peerRatio(c) { return c.peer && c.peer.ratio; }
  var hasPeer = cases.some(function (c) { return !!c.peer; });
  var peerLib = '';
  cases.some(function (c) { return c.peer && c.peer.lib && (peerLib = c.peer.lib); });

  /* ---- the diverging scale of ours/peer: blue faster, orange slower (log2 steps) ---- */
  var RATIO_COLOURS = [['#08519c', '#fff'], ['#6baed6', '#000'], ['#c6dbef', '#000'], ['#f2f2f2', '#000'],
                       ['#fdd0a2', '#000'], ['#fd8d3c', '#000'], ['#a63603', '#fff']];
  function ratioStyle(r) {
    var l = Math.log2(r), k;
    if (Math.abs(l) < 0.1375) k = 3;               /* within 10%: neutral */
    else if (l < 0) k = l < -1 ? 0 : l < -0.415 ? 1 : 2;
    else k = l > 1 ? 6 : l > 0.415 ? 5 : 4;
    return 'background:' + RATIO_COLOURS[k][0] + ';color:' + RATIO_COLOURS[k][1];
  }
  function ratioCell(r) {
    if (!(r > 0)) return h('span', {class: 'muted', text: '-'});
    return h('span', {class: 'ratio', style: ratioStyle(r), title: r > 1 ? 'opperf slower than the peer' : 'opperf faster than the peer',
                      text: sig(r, 3)});
  }

  /* ---- the context block ---- */
  function dl(pairs) {
    var d = h('dl');
    pairs.forEach(function (p) {
      if (p[1] === undefined || p[1] === null || p[1] === '') return;
      d.appendChild(h('dt', {text: p[0]}));
      d.appendChild(h('dd', {}, [p[1] instanceof Node ? p[1] : String(p[1])]));
    });
    return d;
  }
  function card(title, pairs, wide) { return h('div', {class: 'card' + (wide ? ' wide' : '')}, [h('h3', {text: title}), dl(pairs)]); }

  /* The roofline ceilings the run recorded (context.machine: the file `opperf machine` wrote).
   * Whatever the file carries is drawn: every [1 thread, all threads] pair or single number
   * under a key naming FLOP/s is a compute ceiling, under one naming bandwidth a memory ceiling
   * (cache levels appear as their own lines when the machine data has them). */
  function ceilings(machine, threads) {
    var out = [], idx = threads > 1 ? 1 : 0;
    function kindOf(path) {
      var p = path.join('.').toLowerCase();
      if (/flop|peak/.test(p)) return 'compute';
      if (/bandwidth|bw|bytes_per_s/.test(p)) return 'memory';
      return null;
    }
    function label(path, kind) {
      var parts = path.filter(function (x) { return !/flop|peak|bandwidth|^bw$|bytes_per_s|^levels$|^ceilings$|^value$/i.test(x); });
      /* the top-level figure: the triad far beyond the last-level cache */
      return parts.join(' ') || (kind === 'memory' ? 'DRAM' : 'peak');
    }
    function add(path, v) {
      var kind = kindOf(path);
      if (kind && v > 0 && isFinite(v)) out.push({kind: kind, label: label(path, kind), value: v, path: path.join('.')});
    }
    function walk(o, path) {
      if (Array.isArray(o)) {
        if (o.length === 2 && o.every(function (x) { return typeof x === 'number'; })) { add(path, o[idx]); return; }
        o.forEach(function (x, i) {
          if (x && typeof x === 'object') walk(x, path.concat(String(x.name || x.level || i)));
          else if (typeof x === 'number') add(path.concat(String(i)), x);
        });
        return;
      }
      for (var k in o) {
        if (k === 'name' || k === 'level') continue;
        var v = o[k];
        if (typeof v === 'number') add(path.concat(k), v);
        else if (v && typeof v === 'object') walk(v, path.concat(k));
      }
    }
    if (machine && typeof machine === 'object') walk(machine, []);
    return out;
  }
  var runThreads = settings.threads || ctx.omp_threads || 1;
  var CEIL = ceilings(ctx.machine, runThreads);

  function drawContext() {
    if (!run) return;
    var sec = section('context', 'Context');
    var host = ctx.host || {}, tool = ctx.tool || {}, blas = ctx.blas || {}, perf = ctx.perf || {};
    var caches = (host.caches || []).map(function (k) {
      return 'L' + k.level + (k.type === 'Data' ? 'd' : k.type === 'Instruction' ? 'i' : '') + ' ' + fmtBytes(k.size_bytes);
    }).join(', ');
    var ok = cases.filter(function (c) { return c.status === 'ok'; }).length;
    var summary = h('p', {class: 'summary'}, [h('b', {text: String(cases.length)}), ' cases, ', h('b', {text: String(ok)}), ' ok',
      cases.length - ok ? ', ' : '', cases.length - ok ? h('b', {class: 'st-bad', text: (cases.length - ok) + ' not ok'}) : null,
      ' \u2014 ' + (run.label || '') + (run.file ? ' (' + run.file + ')' : '')]);
    sec.appendChild(summary);
    if (ctx.interrupted) sec.appendChild(h('p', {class: 'warn', text: 'This run was interrupted: the cases are those measured before it stopped.'}));
    var load = host.loadavg_1min || {};
    var grid = h('div', {class: 'ctx'});
    grid.appendChild(card('Machine', [['host', host.hostname], ['CPU', host.cpu_model], ['CPUs online', host.cpus_online],
      ['memory', host.mem_total_bytes ? fmtBytes(host.mem_total_bytes) : ''], ['kernel', host.kernel], ['caches', caches],
      ['load (1 min)', load.start !== undefined ? sig(load.start, 3) + ' at start, ' + sig(load.end, 3) + ' at end' : '']]));
    grid.appendChild(card('BLAS', [['kernel', blas.core ? blas.core + (blas.core_source ? ' (' + blas.core_source + ')' : '') : ''],
      ['CPU family', blas.cpu_family], ['note', blas.core_note], ['threads', blas.threads], ['parallel', blas.parallel], ['config', blas.config]]));
    grid.appendChild(card('Settings', [['threads', settings.threads], ['OpenMP threads', ctx.omp_threads], ['CPUs', settings.cpus],
      ['cache', settings.cache], ['events', settings.events], ['backend', settings.backend],
      ['time', settings.min_time_s !== undefined ? 'warm-up ' + settings.warmup_s + ' s, ' + settings.min_time_s + ' to ' + settings.max_time_s + ' s per case' : ''],
      ['stop', settings.ci_target !== undefined ? 'median CI within ' + sig(100 * settings.ci_target, 3) + '% (runs ' + settings.min_runs + ' to ' + settings.max_runs + ')' : ''],
      ['seed', settings.seed], ['peer', ctx.peer]]));
    grid.appendChild(card('Run', [['when', ctx.timestamp], ['command', ctx.command], ['opperf', tool.version],
      ['commit', tool.git_hash], ['build', [tool.build_type, tool.compiler].filter(Boolean).join(', ')], ['flags', tool.cflags]]));
    var roofPairs;
    if (CEIL.length) {
      roofPairs = CEIL.map(function (c) { return [c.label, c.kind === 'compute' ? fmtRate(c.value, 'FLOP/s') : fmtRate(c.value, 'B/s')]; });
      roofPairs.push(['for', runThreads > 1 ? 'all threads (' + runThreads + ')' : '1 thread']);
      if (ctx.machine && ctx.machine.timestamp) roofPairs.push(['measured', ctx.machine.timestamp]);
    } else {
      roofPairs = [['ceilings', ctx.roofline_available ? 'measured, but this run did not record them' : 'none: run opperf machine before opperf run']];
    }
    grid.appendChild(card('Roofline', roofPairs));
    var evs = (perf.counters || []).map(function (e) {
      return [e.name, e.status === 'counted' ? 'counted' + (e.privilege ? ' (' + e.privilege + ')' : '')
                                            : h('span', {class: 'nc', text: e.status + (e.reason ? ': ' + e.reason : '')})];
    });
    if (perf.pmus_detected !== undefined) evs.unshift(['PMUs', perf.pmus_detected || 'none']);
    grid.appendChild(card('Counters', evs, true));
    sec.appendChild(grid);
  }

  /* ---- the table of cases ---- */
  var COLS = [
    {key: 'op', label: 'operator', get: function (c) { return c.op; }},
    {key: 'shape', label: 'shape', cls: 'spec', get: caseShape},
    {key: 'dtype', label: 'dtype', get: function (c) { return c.dtype; }},
    {key: 'pass', label: 'pass', get: function (c) { return c.pass; }},
    {key: 'impl', label: 'impl', get: function (c) { return c.impl; }},
    {key: 'threads', label: 'threads', num: true, get: caseThreads},
    {key: 'time', label: 'median time (95% CI)', num: true, get: median, cell: function (c) {
      if (!c.t) return '-';
      var half = c.t[2] > 0 ? (c.t[2] - c.t[1]) / 2 / c.t[0] : null;
      return h('span', {title: c.t[2] > 0 ? '95% CI of the median: ' + fmtTime(c.t[1]) + ' to ' + fmtTime(c.t[2]) : 'no CI recorded'},
               [fmtTime(c.t[0]), half !== null ? h('span', {class: 'ci', text: ' \u00b1' + sig(100 * half, 2) + '%'}) : null]);
    }},
    {key: 'gflops', label: 'GFLOP/s', num: true, get: gflops, cell: function (c) { return sig(gflops(c), 3); }},
    {key: 'gbps', label: 'GB/s', num: true, get: gbps, cell: function (c) { return sig(gbps(c), 3); }},
    {key: 'roof', label: 'roofline', num: true, get: roofPct, cell: function (c) {
      var p = roofPct(c);
      if (!(p >= 0)) return '-';
      return h('span', {title: 'share of the roofline bound'}, [h('span', {class: 'bar'}, [h('span', {style: 'width:' + Math.min(100, p) + '%'})]), sig(p, 2) + '%']);
    }}
  ];
  if (hasPeer) COLS.push({key: 'peer', label: 'ours/' + (peerLib ? peerLib.split(' ')[0] : 'peer'), num: true, get: peerRatio,
                          cell: function (c) { return ratioCell(peerRatio(c)); }});
  COLS.push({key: 'status', label: 'status', get: function (c) { return c.status; }, cell: function (c) {
    return h('span', {class: c.status === 'ok' ? 'st-ok' : 'st-bad', title: c.msg || '', text: c.status + (c.msg ? ': ' + c.msg : '')});
  }});

  var rows = [], selected = -1, tbody = null, detail = null;
  var sortState = {col: -1, dir: 1};

  function drawTable() {
    if (!run) return;
    var sec = section('cases', 'Cases');
    var filter = h('input', {type: 'search', id: 'filter', placeholder: 'filter, e.g. conv float64 -bwd',
                              'aria-label': 'filter the cases: every word must match the operator, shape, dtype, pass, impl or status; -word excludes', title: 'every word must match (operator, shape, dtype, pass, impl, status); -word excludes'});
    var statuses = {};
    cases.forEach(function (c) { statuses[c.status] = 1; });
    var stSel = h('select', {id: 'status-filter', 'aria-label': 'status'}, [h('option', {value: '', text: 'any status'})].concat(
      Object.keys(statuses).sort().map(function (st) { return h('option', {value: st, text: st}); })));
    var count = h('span', {id: 'count', class: 'muted'});
    var tools = h('div', {class: 'toolbar'}, [filter, stSel, count]);
    if (hasPeer) {
      var leg = h('span', {class: 'legend'}, ['ours/' + (peerLib || 'peer') + ' (median time ratio):']);
      [0.25, 0.6, 0.85, 1, 1.2, 1.7, 4].forEach(function (r) {
        leg.appendChild(h('span', {class: 'ratio', style: ratioStyle(r), text: r < 1 ? '<' + r : r > 1 ? '>' + r : '1'}));
      });
      leg.appendChild(document.createTextNode('blue: opperf faster, orange: slower'));
      tools.appendChild(leg);
    }
    sec.appendChild(tools);
    var trh = h('tr');
    COLS.forEach(function (col, i) {
      var th = h('th', {class: 'sortable' + (col.num ? ' num' : ''), scope: 'col', tabindex: '0', 'data-col': col.key,
                        title: 'sort by ' + col.label}, [col.label]);
      th.addEventListener('click', function () { sortBy(i); });
      th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); sortBy(i); } });
      trh.appendChild(th);
    });
    tbody = h('tbody');
    var frag = document.createDocumentFragment();
    cases.forEach(function (c, i) {
      var tr = h('tr', {'data-i': String(i), tabindex: '0'});
      COLS.forEach(function (col) {
        var v = col.cell ? col.cell(c) : col.get(c);
        tr.appendChild(h('td', {class: (col.num ? 'num ' : '') + (col.cls || '')}, [v === undefined || v === null ? '-' : v]));
      });
      tr.addEventListener('click', function () { select(i, true); });
      tr.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') select(i, true); });
      c._text = [c.op, caseShape(c), c.dtype, c.pass, c.impl, c.status, c.cat || '', c.msg || ''].join(' ').toLowerCase();
      rows.push(tr);
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    var table = h('table', {class: 'grid', id: 'cases-table'}, [h('thead', {}, [trh]), tbody]);
    sec.appendChild(h('div', {class: 'tablewrap'}, [table]));
    sec.appendChild(h('p', {class: 'note', text: 'Click a column to sort (again to reverse), a case for its roofline, counters and top-down. ' +
      'GFLOP/s and GB/s are the models\' work at the median time; roofline is the roofline\'s shortest time as a share of the median.'}));
    detail = h('div', {id: 'detail'});
    sec.appendChild(detail);
    function apply() {
      var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean), st = stSel.value, shown = 0;
      cases.forEach(function (c, i) {
        var ok = (!st || c.status === st) && terms.every(function (t) {
          return t[0] === '-' && t.length > 1 ? c._text.indexOf(t.slice(1)) < 0 : c._text.indexOf(t) >= 0;
        });
        rows[i].classList.toggle('hidden', !ok);
        if (ok) shown++;
      });
      count.textContent = shown + ' of ' + cases.length + ' cases';
    }
    filter.addEventListener('input', apply);
    stSel.addEventListener('change', apply);
    apply();
  }

  function sortBy(i) {
    var col = COLS[i];
    sortState.dir = sortState.col === i ? -sortState.dir : (col.num ? -1 : 1);
    sortState.col = i;
    var dir = sortState.dir;
    var idx = cases.map(function (c, k) { return k; });
    idx.sort(function (a, b) {
      var x = col.get(cases[a]), y = col.get(cases[b]);
      var xm = x === undefined || x === null || x === '' || (col.num && !isFinite(x));
      var ym = y === undefined || y === null || y === '' || (col.num && !isFinite(y));
      if (xm || ym) return xm && ym ? a - b : xm ? 1 : -1;   /* missing values last either way */
      var r = col.num ? x - y : String(x).localeCompare(String(y), undefined, {numeric: true});
      return r ? r * dir : a - b;
    });
    var frag = document.createDocumentFragment();
    idx.forEach(function (k) { frag.appendChild(rows[k]); });
    tbody.appendChild(frag);
    document.querySelectorAll('#cases-table th').forEach(function (th, k) {
      if (k === i) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    });
  }

  /* ---- charts ---- */
  function logTicks(lo, hi) {
    /* decades; with 1-2-5 steps in between when the range spans fewer than three */
    var steps = Math.log10(hi / lo) < 2.5 ? [1, 2, 5] : [1], t = [];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      steps.forEach(function (m) {
        var v = m * Math.pow(10, e);
        if (v >= lo * 0.999 && v <= hi * 1.001) t.push(Number(v.toPrecision(6)));
      });
    }
    return t;
  }
  function linTicks(lo, hi, n) {
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n || 1)));
    [1, 2, 5, 10].some(function (m) { if ((hi - lo) / (step * m) <= n) { step *= m; return true; } return false; });
    var t = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push(Number(v.toPrecision(12)));
    return t;
  }
  function tickLabel(v) {
    if (v === 0) return '0';
    if (Math.abs(v) >= 1e4 || Math.abs(v) < 1e-2) return v.toExponential(0).replace('e+', 'e');
    return String(Number(v.toPrecision(3)));
  }
  /* A frame: axes, grid, labels. opts: w, h, x/y: {lo, hi, log, label}. Returns {svg, X, Y, plot}. */
  function frame(opts) {
    var W = opts.w || 560, H = opts.h || 360, m = {l: 62, r: opts.right || 20, t: 26, b: 44};
    var svg = s('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', 'aria-label': opts.title || 'chart'});
    function scale(ax, a, b) {
      if (ax.log) { var l0 = Math.log10(ax.lo), l1 = Math.log10(ax.hi); return function (v) { return a + (Math.log10(v) - l0) / (l1 - l0 || 1) * (b - a); }; }
      return function (v) { return a + (v - ax.lo) / (ax.hi - ax.lo || 1) * (b - a); };
    }
    var X = scale(opts.x, m.l, W - m.r), Y = scale(opts.y, H - m.b, m.t);
    var g = s('g', {class: 'axis'});
    var xt = opts.x.ticks || (opts.x.log ? logTicks(opts.x.lo, opts.x.hi) : linTicks(opts.x.lo, opts.x.hi, 6));
    var yt = opts.y.log ? logTicks(opts.y.lo, opts.y.hi) : linTicks(opts.y.lo, opts.y.hi, 5);
    xt.forEach(function (v) {
      var x = X(typeof v === 'object' ? v.v : v);
      g.appendChild(s('line', {class: 'gridline', x1: x, x2: x, y1: m.t, y2: H - m.b}));
      g.appendChild(s('text', {x: x, y: H - m.b + 14, 'text-anchor': 'middle'}, [typeof v === 'object' ? v.label : tickLabel(v)]));
    });
    yt.forEach(function (v) {
      var y = Y(v);
      g.appendChild(s('line', {class: 'gridline', x1: m.l, x2: W - m.r, y1: y, y2: y}));
      g.appendChild(s('text', {x: m.l - 4, y: y + 4, 'text-anchor': 'end'}, [tickLabel(v)]));
    });
    g.appendChild(s('path', {d: 'M' + m.l + ' ' + m.t + 'V' + (H - m.b) + 'H' + (W - m.r), fill: 'none'}));
    g.appendChild(s('text', {x: (m.l + W - m.r) / 2, y: H - 8, 'text-anchor': 'middle'}, [opts.x.label]));
    g.appendChild(s('text', {x: 14, y: (m.t + H - m.b) / 2, transform: 'rotate(-90 14 ' + (m.t + H - m.b) / 2 + ')', 'text-anchor': 'middle'}, [opts.y.label]));
    if (opts.title) g.appendChild(s('text', {x: m.l, y: 16, style: 'font-weight:600'}, [opts.title]));
    svg.appendChild(g);
    var clip = 'clip' + Math.random().toString(36).slice(2);
    svg.appendChild(s('defs', {}, [s('clipPath', {id: clip}, [s('rect', {x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b})])]));
    var plot = s('g', {'clip-path': 'url(#' + clip + ')'});
    svg.appendChild(plot);
    return {svg: svg, X: X, Y: Y, plot: plot, m: m, W: W, H: H};
  }
  var PASS_COLOUR = {fwd: '#0072b2', bwd: '#d55e00'};   /* Okabe-Ito blue and vermillion */
  var SERIES = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000'];
  var MEM_COLOURS = ['#7a3e9d', '#0b7a75', '#9c6b00', '#444444', '#b3367a'];

  function rooflineChart(op, sel) {
    var pts = cases.filter(function (c) { return c.op === op && gflops(c) > 0 && c.flops > 0 && c.bytes > 0; });
    var box = h('div');
    if (!pts.length) {
      box.appendChild(h('p', {class: 'note', text: 'No roofline point for ' + op + ': its model has no floating-point work (or no time), so only GB/s applies.'}));
      return box;
    }
    var dtypes = {};
    pts.forEach(function (c) { dtypes[c.dtype] = 1; });
    var comp = CEIL.filter(function (c) {
      return c.kind === 'compute' && (!/float(32|64)/.test(c.label) || Object.keys(dtypes).some(function (d) { return c.label.indexOf(d) >= 0; }));
    });
    var mem = CEIL.filter(function (c) { return c.kind === 'memory'; });
    var ai = pts.map(function (c) { return c.flops / c.bytes; }), gf = pts.map(function (c) { return gflops(c) * 1e9; });
    var xlo = Math.min.apply(null, ai) / 3, xhi = Math.max.apply(null, ai) * 3;
    var ylo = Math.min.apply(null, gf) / 3, yhi = Math.max.apply(null, gf) * 3;
    var top = 0;
    comp.forEach(function (c) { top = Math.max(top, c.value); yhi = Math.max(yhi, c.value * 1.6); });
    mem.forEach(function (c) { if (top) { xhi = Math.max(xhi, top / c.value * 2); xlo = Math.min(xlo, top / c.value / 4); } });
    xlo = Math.max(xlo, 1e-4);
    var f = frame({w: 600, h: 380, right: CEIL.length ? 130 : 20, title: op + ': roofline (' + (runThreads > 1 ? runThreads + ' threads' : '1 thread') + ')',
                   x: {lo: xlo, hi: xhi, log: true, label: 'arithmetic intensity (FLOP/byte, the models\')'},
                   y: {lo: ylo / 1e9, hi: yhi / 1e9, log: true, label: 'GFLOP/s'}});
    function Y(v) { return f.Y(v / 1e9); }
    var labels = [];
    mem.forEach(function (c, i) {
      var col = MEM_COLOURS[i % MEM_COLOURS.length];
      var xe = top ? Math.min(xhi, top / c.value) : xhi;
      f.plot.appendChild(s('path', {class: 'ceil', stroke: col, 'stroke-dasharray': i ? '5 3' : null,
                                    d: 'M' + f.X(xlo) + ' ' + Y(c.value * xlo) + 'L' + f.X(xe) + ' ' + Y(c.value * xe)},
                           [s('title', {}, [c.label + ': ' + fmtRate(c.value, 'B/s')])]));
      labels.push({y: Y(c.value * xe), text: c.label + ' ' + fmtRate(c.value, 'B/s'), col: col, x: f.X(xe)});
    });
    comp.forEach(function (c, i) {
      var col = i ? '#555' : '#111';
      var bw = mem.length ? Math.max.apply(null, mem.map(function (m) { return m.value; })) : 0;
      var xs = bw ? Math.max(xlo, c.value / bw) : xlo;
      f.plot.appendChild(s('path', {class: 'ceil', stroke: col, 'stroke-dasharray': i ? '2 2' : null,
                                    d: 'M' + f.X(xs) + ' ' + Y(c.value) + 'L' + f.X(xhi) + ' ' + Y(c.value)},
                           [s('title', {}, [c.label + ' peak: ' + fmtRate(c.value, 'FLOP/s')])]));
      labels.push({y: Y(c.value), text: c.label + ' ' + fmtRate(c.value, 'FLOP/s'), col: col, x: f.X(xhi)});
    });
    /* Ceiling labels in the right margin, pushed apart so they never overlap. */
    labels.sort(function (a, b) { return a.y - b.y; });
    var last = -1e9;
    labels.forEach(function (l) {
      var y = Math.max(l.y + 4, last + 12);
      last = y;
      f.svg.appendChild(s('text', {x: f.W - f.m.r + 4, y: y, fill: l.col, style: 'fill:' + l.col}, [l.text]));
    });
    pts.forEach(function (c) {
      var isSel = c === sel;
      var shape = c.dtype === 'float64' ? 'rect' : 'circle';
      var x = f.X(c.flops / c.bytes), y = Y(gflops(c) * 1e9), r = isSel ? 6 : 4;
      var pt = shape === 'rect' ? s('rect', {x: x - r, y: y - r, width: 2 * r, height: 2 * r})
                                : s('circle', {cx: x, cy: y, r: r});
      pt.setAttribute('class', 'pt' + (isSel ? ' sel' : ''));
      pt.setAttribute('fill', PASS_COLOUR[c.pass] || '#555');
      pt.setAttribute('fill-opacity', isSel ? '1' : '0.75');
      pt.setAttribute('data-i', String(cases.indexOf(c)));
      pt.appendChild(s('title', {}, [caseLabel(c) + ': ' + sig(gflops(c), 3) + ' GFLOP/s at ' + sig(c.flops / c.bytes, 3) + ' FLOP/B']));
      pt.addEventListener('click', function () { select(cases.indexOf(c), false); });
      f.plot.appendChild(pt);
    });
    box.appendChild(f.svg);
    var leg = 'points: fwd blue, bwd vermillion; float32 circles, float64 squares; the selected case is outlined.';
    if (!CEIL.length) leg += ' No ceilings: this run recorded no machine figures (run opperf machine before opperf run).';
    box.appendChild(h('p', {class: 'note', text: leg}));
    return box;
  }

  function counterTable(c) {
    if (!c.ctr || !c.ctr.length) return h('p', {class: 'note', text: 'No counters were asked for in this run.'});
    var t = h('table', {class: 'tbl-small', id: 'counters'}, [h('thead', {}, [h('tr', {}, [h('th', {text: 'counter'}), h('th', {text: 'per call'}), h('th', {text: 'status'})])])]);
    var tb = h('tbody');
    c.ctr.forEach(function (e) {
      var counted = e.v !== undefined && (e.status === 'counted' || e.status === 'scaled' || e.status === 'partial');
      var val = counted ? sig(e.v, 4) : h('span', {class: 'nc', text: e.status + (e.reason ? ': ' + e.reason : '')});
      var st = e.status + (counted && e.status !== 'counted' && e.reason ? ': ' + e.reason : '') +
               (e.run !== undefined && e.run < 100 ? ' (running ' + sig(e.run, 3) + '%)' : '');
      /* an event that did not count: its status and reason in place of a number, never a 0 */
      tb.appendChild(counted ? h('tr', {}, [h('td', {text: e.name}), h('td', {class: 'num'}, [val]), h('td', {text: st})])
                             : h('tr', {}, [h('td', {text: e.name}), h('td', {colspan: '2'}, [val])]));
    });
    t.appendChild(tb);
    return t;
  }

  var TD_COLOURS = {retiring: '#009e73', bad_speculation: '#cc79a7', frontend_bound: '#56b4e9', backend_bound: '#e69f00'};
  function topdown(c) {
    var td = c.td, box = h('div', {id: 'topdown'});
    if (!td) return box;
    var md = TD_MODELS[td.model] || {};
    box.appendChild(h('h3', {text: 'Top-down'}));
    if (!td.available) {
      box.appendChild(h('p', {class: 'nc', text: 'not available: ' + (td.reason || 'no reason recorded')}));
      return box;
    }
    var l1 = td.level1 || {}, bar = h('div', {class: 'td-bar', role: 'img', 'aria-label': 'level 1 shares of slots'});
    Object.keys(l1).forEach(function (k) {
      var v = l1[k];
      bar.appendChild(h('div', {style: 'width:' + Math.max(0, 100 * v) + '%;background:' + (TD_COLOURS[k] || '#bbb'),
                                title: k + ' ' + sig(100 * v, 3) + '%', text: k.replace('_', ' ') + ' ' + sig(100 * v, 2) + '%'}));
    });
    box.appendChild(bar);
    var rows2 = Object.keys(l1).map(function (k) { return [k.replace(/_/g, ' '), sig(100 * l1[k], 3) + '%']; });
    Object.keys(td.level2 || {}).forEach(function (k) { rows2.push(['  ' + k.replace(/_/g, ' '), sig(100 * td.level2[k], 3) + '%']); });
    box.appendChild(h('div', {class: 'card'}, [dl(rows2.concat([['verdict', td.verdict || 'none (no bucket holds half the slots)'],
      ['level 2', td.level2_absent ? 'absent: ' + td.level2_absent : ''], ['model', td.model ? td.model + (md.cpu ? ' (' + md.cpu + ')' : '') : ''],
      ['formula', md.formula], ['source', md.source]]))]));
    return box;
  }

  /* ---- trends ---- */
  var T = D.trend || null, trendIndex = {}, caseByKey = {};
  cases.forEach(function (c, i) { caseByKey[c.key] = i; });
  if (T) T.cases.forEach(function (tc, i) { trendIndex[tc.key] = i; });
  function trendChart(tc, w, hgt, small) {
    var pts = tc.pts, vals = [];
    pts.forEach(function (p) { if (p) { vals.push(p[0]); if (p[2] > 0) { vals.push(p[1], p[2]); } } });
    if (!vals.length) return small ? h('span', {class: 'muted', text: '-'}) : h('p', {class: 'note', text: 'no time in any run'});
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals), pad = (hi - lo) * 0.1 || hi * 0.05;
    var n = pts.length;
    if (small) {
      var sv = s('svg', {width: w, height: hgt, class: 'spark', role: 'img', 'aria-label': 'trend'});
      var X = function (i) { return 4 + (n > 1 ? i * (w - 8) / (n - 1) : (w - 8) / 2); };
      var Y = function (v) { return hgt - 3 - (v - lo + pad) / (hi - lo + 2 * pad) * (hgt - 6); };
      var d = '';
      pts.forEach(function (p, i) { if (p) d += (d ? 'L' : 'M') + X(i).toFixed(1) + ' ' + Y(p[0]).toFixed(1); });
      sv.appendChild(s('path', {d: d, fill: 'none', stroke: '#0b5cad', 'stroke-width': 1.5}));
      (tc.changes || []).forEach(function (r) {
        if (pts[r]) sv.appendChild(s('circle', {cx: X(r), cy: Y(pts[r][0]), r: 3, fill: '#d55e00', class: 'change'}, [s('title', {}, ['change point at ' + T.runs[r]])]));
      });
      return sv;
    }
    var u = hi < 1e-6 ? [1e9, 'ns'] : hi < 1e-3 ? [1e6, MICRO + 's'] : hi < 1 ? [1e3, 'ms'] : [1, 's'], k = u[0];
    var f = frame({w: w, h: hgt, title: 'trend across ' + n + ' runs (oldest first)',
                   x: {lo: -0.5, hi: n - 0.5, ticks: pts.map(function (p, i) { return {v: i, label: String(i + 1)}; }), label: 'run'},
                   y: {lo: Math.max(0, lo - pad) * k, hi: (hi + pad) * k, label: 'median time (' + u[1] + '), 95% CI'}});
    var path = '';
    pts.forEach(function (p, i) {
      if (!p) return;
      var x = f.X(i), y = f.Y(p[0] * k);
      path += (path ? 'L' : 'M') + x + ' ' + y;
      if (p[2] > 0) f.plot.appendChild(s('line', {x1: x, x2: x, y1: f.Y(p[1] * k), y2: f.Y(p[2] * k), stroke: '#0b5cad', 'stroke-width': 1}));
      f.plot.appendChild(s('circle', {cx: x, cy: y, r: 3, fill: '#0b5cad'}, [s('title', {}, [T.runs[i] + ': ' + fmtTime(p[0])])]));
    });
    f.plot.insertBefore(s('path', {d: path, fill: 'none', stroke: '#0b5cad', 'stroke-width': 1.5}), f.plot.firstChild);
    (tc.changes || []).forEach(function (r) {
      var x = f.X(r);
      f.plot.appendChild(s('line', {x1: x, x2: x, y1: f.m.t, y2: f.H - f.m.b, stroke: '#d55e00', 'stroke-width': 2, 'stroke-dasharray': '4 3', class: 'change'},
                           [s('title', {}, ['change point at ' + T.runs[r]])]));
    });
    var box = h('div', {}, [f.svg]);
    box.appendChild(h('p', {class: 'note', text: 'runs: ' + T.runs.map(function (r, i) { return (i + 1) + ' = ' + r; }).join('; ') +
      ((tc.changes || []).length ? '. Dashed vermillion lines: change points.' : '')}));
    return box;
  }

  /* ---- a case's detail ---- */
  function select(i, scroll) {
    if (selected >= 0 && rows[selected]) rows[selected].classList.remove('selected');
    selected = i;
    if (rows[i]) rows[i].classList.add('selected');
    var c = cases[i];
    detail.textContent = '';
    detail.appendChild(h('h2', {text: caseLabel(c)}));
    var left = h('div'), right = h('div');
    left.appendChild(rooflineChart(c.op, c));
    if (T && trendIndex[c.key] !== undefined) left.appendChild(trendChart(T.cases[trendIndex[c.key]], 600, 260, false));
    var facts = [['status', c.status + (c.msg ? ': ' + c.msg : '')], ['category', c.cat], ['impl', c.impl],
      ['median', c.t ? fmtTime(c.t[0]) + (c.t[2] > 0 ? ' (95% CI ' + fmtTime(c.t[1]) + ' to ' + fmtTime(c.t[2]) + ')' : '') : ''],
      ['min / p90', c.t ? fmtTime(c.min) + ' / ' + fmtTime(c.p90) : ''], ['samples', c.n !== undefined ? c.n + (c.stop ? ' (stopped: ' + c.stop + ')' : '') : ''],
      ['CV', c.cv !== undefined ? sig(100 * c.cv, 3) + '%' : ''], ['FLOP per call', c.flops ? sig(c.flops, 4) : ''],
      ['bytes per call', c.bytes ? fmtBytes(c.bytes) : ''], ['intensity', c.flops && c.bytes ? sig(c.flops / c.bytes, 3) + ' FLOP/B' : ''],
      ['roofline bound', c.roof ? fmtRate(c.roof, 'FLOP/s') : '']];
    Object.keys(c.m || {}).forEach(function (k) {
      if (['gflops', 'gbps', 'intensity'].indexOf(k) >= 0) return;
      facts.push(/_pct$/.test(k) ? [k.replace(/_pct$/, '').replace(/_/g, ' ') + ' %', sig(c.m[k], 3) + '%'] : [k.replace(/_/g, ' '), sig(c.m[k], 4)]);
    });
    if (c.mem) facts.push(['memory', 'setup ' + fmtBytes(c.mem.setup) + ', per call ' + fmtBytes(c.mem.alloc_call) + ', peak ' + fmtBytes(c.mem.peak)]);
    if (c.check) facts.push(['reference check', c.check]);
    right.appendChild(h('div', {class: 'card'}, [dl(facts)]));
    if (c.peer) {
      var p = c.peer;
      right.appendChild(h('h3', {text: 'Peer: ' + (p.lib || '')}));
      right.appendChild(h('div', {class: 'card'}, [dl([['peer op', p.name], ['status', p.status], ['peer median', p.t ? fmtTime(p.t) : ''],
        ['ours/peer', p.ratio ? ratioCell(p.ratio) : ''], ['results agree', p.agree === undefined ? 'not checked' : p.agree ? 'yes' : 'NO']])]));
    }
    right.appendChild(h('h3', {text: 'Counters'}));
    right.appendChild(counterTable(c));
    right.appendChild(topdown(c));
    var sw = (D.sweeps || []).filter(function (w) { return w.op === c.op; });
    if (sw.length) right.appendChild(h('p', {}, [h('a', {href: '#sweeps', text: sw.length + ' sweep(s) of ' + c.op + ' below'})]));
    detail.appendChild(h('div', {class: 'detail-grid'}, [left, right]));
    if (scroll) detail.scrollIntoView({block: 'nearest'});
  }

  /* ---- sweeps ---- */
  function drawSweeps() {
    var sweeps = D.sweeps || [];
    if (!sweeps.length) return;
    var sec = section('sweeps', 'Sweeps');
    sweeps.forEach(function (w, wi) {
      var pts = (w.points || []).filter(function (p) { return p.status === 'ok'; });
      var box = h('div', {class: 'sweep', id: 'sweep-' + wi});
      box.appendChild(h('h3', {text: 'sweep ' + w.op + ': ' + w.sweep + ' (' + w.dtype + ')'}));
      var ctxw = w.context || {};
      box.appendChild(h('p', {class: 'note', text: [ctxw.cpu_model, ctxw.blas && ctxw.blas.core ? 'BLAS ' + ctxw.blas.core : '',
        ctxw.threads ? ctxw.threads + ' threads' : '', ctxw.timestamp, ctxw.git_hash ? 'commit ' + ctxw.git_hash : '', w.file].filter(Boolean).join(' \u00b7 ')}));
      var metrics = [['ns_per_elem', 'time per element (ns)'], ['gbps', 'GB/s'], ['cycles_per_elem', 'cycles per element'], ['time_per_call_s', 'time per call (s)']]
        .filter(function (m) { return pts.some(function (p) { return typeof p[m[0]] === 'number'; }); });
      var missNames = {};
      pts.forEach(function (p) { Object.keys(p.misses || {}).forEach(function (k) { if (typeof p.misses[k].per_kib === 'number') missNames[k] = 1; }); });
      Object.keys(missNames).forEach(function (k) { metrics.push(['miss:' + k, k + ' per KiB']); });
      var selm = h('select', {'aria-label': 'metric'}, metrics.map(function (m) { return h('option', {value: m[0], text: m[1]}); }));
      var holder = h('div');
      box.appendChild(h('div', {class: 'toolbar'}, ['plot: ', selm]));
      box.appendChild(holder);
      if (!pts.length) box.appendChild(h('p', {class: 'note', text: 'no point of this sweep measured'}));
      function val(p, m) { return m.indexOf('miss:') === 0 ? (p.misses[m.slice(5)] || {}).per_kib : p[m]; }
      function draw() {
        holder.textContent = '';
        if (!pts.length || !metrics.length) return;
        var m = selm.value, label = metrics.filter(function (x) { return x[0] === m; })[0][1];
        var cat = /^shapes /.test(w.sweep || '');
        var xs = pts.map(function (p) { return p.x; }), ys = pts.map(function (p) { return val(p, m); }).filter(function (v) { return typeof v === 'number'; });
        if (!ys.length) return;
        var xlo = Math.min.apply(null, xs), xhi = Math.max.apply(null, xs);
        var xlog = !cat && xlo > 0 && xhi / xlo > 30, ylo = Math.min.apply(null, ys), yhi = Math.max.apply(null, ys);
        var ylog = ylo > 0 && yhi / ylo > 30;
        var ticks = null;
        if (cat || pts.length <= 12) {
          var seen = {};
          ticks = [];
          pts.forEach(function (p) { if (!seen[p.x]) { seen[p.x] = 1; ticks.push({v: p.x, label: p.shape}); } });
        }
        if (xlo === xhi) { xlo -= 1; xhi += 1; }
        var f = frame({w: 720, h: 360, right: 150, title: w.op + ': ' + label,
                       x: {lo: xlog ? xlo / 1.3 : xlo - (xhi - xlo) * 0.05, hi: xlog ? xhi * 1.3 : xhi + (xhi - xlo) * 0.05, log: xlog, ticks: ticks, label: cat ? 'shape' : 'x (' + w.sweep + ')'},
                       y: {lo: ylog ? ylo / 1.3 : Math.min(0, ylo), hi: ylog ? yhi * 1.3 : yhi * 1.1 || 1, log: ylog, label: label}});
        var series = {};
        pts.forEach(function (p) { var k = p.pass + ', ' + p.cache + ' cache'; (series[k] = series[k] || []).push(p); });
        Object.keys(series).forEach(function (k, si) {
          var col = SERIES[si % SERIES.length], d = '';
          series[k].sort(function (a, b) { return a.x - b.x; }).forEach(function (p) {
            var v = val(p, m);
            if (typeof v !== 'number' || (ylog && !(v > 0))) return;
            var x = f.X(p.x), y = f.Y(v);
            d += (d ? 'L' : 'M') + x + ' ' + y;
            f.plot.appendChild(s('circle', {cx: x, cy: y, r: 3.5, fill: col}, [s('title', {}, [p.shape + ' ' + k + ': ' + sig(v, 4)])]));
          });
          f.plot.insertBefore(s('path', {d: d, fill: 'none', stroke: col, 'stroke-width': 1.8}), f.plot.firstChild);
          f.svg.appendChild(s('text', {x: f.W - f.m.r + 8, y: f.m.t + 14 + 16 * si, style: 'fill:' + col}, [k]));
        });
        holder.appendChild(f.svg);
      }
      selm.addEventListener('change', draw);
      draw();
      sec.appendChild(box);
    });
  }

  /* ---- trends and regressions ---- */
  function drawTrends() {
    if (!T) return;
    var sec = section('regressions', 'Regressions');
    var n = T.runs.length;
    sec.appendChild(h('p', {class: 'note', text: n + ' runs, oldest first: ' + T.runs.map(function (r, i) { return (i + 1) + ' = ' + r; }).join('; ') +
      '. Ratio = median time of the last run over the one before; CIs separate: the two 95% CIs of the median do not overlap.'}));
    var regs = T.regressions || [];
    var limit = 50, all = false;
    var table = h('table', {class: 'grid', id: 'regressions-table'}, [h('thead', {}, [h('tr', {}, ['case', 'run ' + (n - 1), 'run ' + n, 'last/previous', 'CIs separate', 'trend'].map(function (l, k) {
      return h('th', {class: k >= 1 && k <= 3 ? 'num' : '', text: l});
    }))])]);
    var tb = h('tbody');
    table.appendChild(tb);
    var more = h('button', {type: 'button'});
    function fill() {
      tb.textContent = '';
      var frag = document.createDocumentFragment();
      regs.slice(0, all ? regs.length : limit).forEach(function (r) {
        var tc = T.cases[r.c], a = tc.pts[n - 2], b = tc.pts[n - 1];
        var ci = caseByKey[tc.key] !== undefined ? caseByKey[tc.key] : -1;
        var tr = h('tr', {}, [h('td', {class: 'spec', text: tc.label, title: tc.label}), h('td', {class: 'num', text: fmtTime(a[0])}),
          h('td', {class: 'num', text: fmtTime(b[0])}),
          h('td', {class: 'num'}, [h('span', {class: 'ratio', style: ratioStyle(r.ratio), text: sig(r.ratio, 3)})]),
          h('td', {text: r.sep ? 'yes' : 'no'}), h('td', {}, [trendChart(tc, 140, 26, true)])]);
        if (ci >= 0) tr.addEventListener('click', function () { select(ci, true); });
        frag.appendChild(tr);
      });
      tb.appendChild(frag);
      more.textContent = all ? 'show the ' + limit + ' largest' : 'show all ' + regs.length;
      more.classList.toggle('hidden', regs.length <= limit);
    }
    more.addEventListener('click', function () { all = !all; fill(); });
    fill();
    sec.appendChild(h('div', {class: 'tablewrap'}, [table]));
    sec.appendChild(more);
    var nchg = T.cases.filter(function (tc) { return (tc.changes || []).length; }).length;
    sec.appendChild(h('p', {class: 'note', text: nchg ? nchg + ' case(s) with change points (vermillion dots in the trend lines).' :
      'No change points in the input (a results store marks them).'}));
  }

  drawContext();
  drawTable();
  drawTrends();
  drawSweeps();
  if (!run && !(D.sweeps || []).length) main.appendChild(h('p', {text: 'Nothing to show.'}));
  /* For scripts and tests driving the page: the data, and the cases as the page decoded them. */
  window.opperf = {data: D, cases: cases};
  document.body.setAttribute('data-ready', '1');
})();
