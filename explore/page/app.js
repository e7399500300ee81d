/*
 * app.js: servesim explore's page -- the lessons as live panels (index.html)
 * and the what-if page for a stored run (whatif.html).  Plain JavaScript, no
 * framework, nothing from the network but this server's own /api.
 *
 * Every control change is debounced, and each panel keeps at most one request
 * in flight: when it returns and the knobs moved meanwhile, its answer is
 * dropped and the latest knobs are asked for.  The status attributes the
 * browser test reads live on each panel: data-state (loading|ready|error),
 * data-sets, data-quick, data-elapsed-ms (lessons) and data-slo-args (what-if).
 */
'use strict';

(function () {
  var DEBOUNCE_MS = 150;

  var TITLES = {
    'two-clocks': 'Two clocks',
    'chat-vs-summary': 'Chat or summary',
    'batching': 'Batching',
    'speculation': 'Speculative decoding',
    'utilisation': 'Utilisation',
    'tail': 'The tail',
    'priorities': 'Priorities',
    'memory': 'Memory',
    'day': 'A day',
    'fan-out': 'Fan-out',
    'definitions': 'Definitions'
  };
  var HINTS = {
    'two-clocks': 'Drag the prompt to 32k, then the reply: the prompt moves TTFT, the reply moves end-to-end latency. The last sentence runs the same load on vLLM V1: what its step pipeline and its host add to TTFT.',
    'chat-vs-summary': 'A short chat reply and a long summary, on a system that starts fast and one that streams fast.',
    'batching': 'Drag the users down to 64, then up to 256: throughput rises until the batch is full, then only the queue grows.',
    'speculation': 'Drag the users down to 64, then up to 256: speculation nearly halves TPOT for a few users and slows every user past the crossover. Then drag the accepted length: a better drafter (2.39 is EAGLE at K = 4 in vLLM issue #20780) moves the crossover to more users.',
    'utilisation': 'Drag the lowest utilisation from 40% down to 10% and up: the cost of a token follows 1/utilisation. Then switch to the whole server: hosts and cooling draw whatever the load.',
    'tail': 'Drag the slow requests to 2%, then 5%: P99 falls off its cliff long before the mean notices.',
    'priorities': 'Drag the batch traffic up to 90%: first come first served makes the interactive requests wait behind the batch ones, priority keeps their TTFT under a second while the batch tier absorbs the queue. Then lower the arrival rate: the share where first come first served misses its target moves up. Then drag the gateway down to GIE\'s default of 5 waiting requests: it sheds from the lightest share and holds the interactive requests at the door too, and both orders miss their target at the heavy shares.',
    'memory': 'Drag the sessions in flight up to 384: once their histories outgrow the GPU\'s memory the prefix cache hit rate falls and TTFT climbs, as every evicted history is prefilled again. Then set the CPU tier to 0, and up to 256 GiB: the tier loads the evicted histories back over PCIe until the working set outgrows it too.',
    'day': 'Drag the autoscaler\'s highest target up from 8 running requests a replica to 128: the day costs less as each replica runs hotter, until the replicas it asks for start too late for the morning and the tail pays. Then make a node slower to provision: the lag grows and a lower target is needed to hold the SLO.',
    'fan-out': 'Pick 10 calls per task, then 100; then make slow calls rarer or commoner: the rare slow call becomes the common slow task.',
    'definitions': 'One run, every tool\u2019s definition of per-token latency side by side.'
  };

  /* ---- small helpers ---------------------------------------------------- */

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') e.textContent = v;
        else if (k === 'class') e.className = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  /* A number as a plain decimal (never 1e-7), for a query. */
  function dec(x) {
    var s = String(x);
    if (!/e/i.test(s)) return s;
    return x.toFixed(20).replace(/\.?0+$/, '');
  }

  /* A number rounded for reading: four significant digits, no exponent
   * unless it is very large or very small. */
  function readable(x) {
    if (x === null || x === undefined) return 'n/a';
    if (typeof x !== 'number') return String(x);
    if (!isFinite(x)) return 'n/a';
    if (Number.isInteger(x) && Math.abs(x) < 1e9) return String(x);
    var a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e7)) return x.toExponential(2);
    var s = x.toPrecision(4);
    if (s.indexOf('.') >= 0) s = s.replace(/0+$/, '').replace(/\.$/, '');
    return s;
  }

  function cell(x, decimals) {
    if (x === null || x === undefined) return '\u2014';
    if (typeof x === 'number') return isFinite(x) ? x.toFixed(decimals || 0) : '\u2014';
    return String(x);
  }

  /* "32768 tokens", "10%", "4 users": a control's value as shown. */
  function shown(c, i) {
    var text = c.labels && c.labels[i] !== undefined ? String(c.labels[i]) : String(c.values[i]);
    if (/[0-9]e[+-]?[0-9]/i.test(text) && c.unit !== '%') text = dec(c.values[i]); /* 3.277e+04 */
    if (c.unit && c.unit !== '%' && text.slice(-c.unit.length) !== c.unit) text += ' ' + c.unit;
    else if (c.unit === '%' && text.slice(-1) !== '%') text += '%';
    return text;
  }

  function humanName(name) {
    return name.replace(/_/g, ' ');
  }

  /* Inserts an SVG document's root into host, as the server drew it. */
  function putSvg(host, text) {
    host.textContent = '';
    if (!text) return;
    var doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    var root = doc.documentElement;
    if (root && root.nodeName.toLowerCase() === 'svg' && !doc.getElementsByTagName('parsererror').length) {
      var svg = document.importNode(root, true);
      if (!svg.getAttribute('viewBox') && svg.getAttribute('width') && svg.getAttribute('height'))
        svg.setAttribute('viewBox', '0 0 ' + parseFloat(svg.getAttribute('width')) + ' ' +
                         parseFloat(svg.getAttribute('height')));
      svg.setAttribute('role', 'img');
      host.appendChild(svg);
    } else {
      host.appendChild(el('p', {'class': 'error', text: 'The figure could not be read.'}));
    }
  }

  /* GET url as JSON: calls done(status, body); status 0 when the server
   * could not be reached. */
  function getJson(url, done) {
    fetch(url, {headers: {'Accept': 'application/json'}, cache: 'no-store'})
      .then(function (r) {
        return r.text().then(function (t) {
          var body;
          try { body = JSON.parse(t); } catch (e) { body = {error: 'HTTP ' + r.status + ': ' + t.slice(0, 200)}; }
          return [r.status, body];
        });
      }, function (e) {
        return [0, {error: 'the server could not be reached (' + e.message + '); is servesim explore still running?'}];
      })
      .then(function (a) { done(a[0], a[1]); });
  }

  function errorText(status, body) {
    var msg = body && body.error ? String(body.error) : 'HTTP ' + status;
    if (body && body.path) msg += ' (at ' + body.path + ')';
    if (status === 503) msg = 'Too slow to compute live: ' + msg;
    return msg;
  }

  function randomSeed(not) {
    var s;
    do {
      var buf = new Uint32Array(1);
      window.crypto.getRandomValues(buf);
      s = 1 + (buf[0] % 1000000);
    } while (s === not);
    return s;
  }

  /* A debounced, one-in-flight requester: ask() after every change; query()
   * gives the URL for the current state; apply(status, body) shows an answer
   * that is still current. */
  function Requester(query, apply, onLoading) {
    this.query = query;
    this.apply = apply;
    this.onLoading = onLoading;
    this.timer = null;
    this.inflight = null;
  }
  Requester.prototype.ask = function (now) {
    var self = this;
    this.onLoading();
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(function () { self.timer = null; self.send(); }, now ? 0 : DEBOUNCE_MS);
  };
  Requester.prototype.send = function () {
    var self = this;
    if (this.inflight) return; /* sent again when the one in flight returns */
    var url = this.query();
    this.inflight = url;
    getJson(url, function (status, body) {
      self.inflight = null;
      if (self.timer) return;              /* a newer change is waiting for its debounce */
      if (self.query() !== url) { self.send(); return; } /* the knobs moved: ask again */
      self.apply(status, body);
    });
  };

  /* ---- projector mode and the address bar ------------------------------- */

  var params = new URLSearchParams(window.location.search);
  var extraParams = null; /* a function adding the page's own knobs */

  function writeUrl() {
    var p = new URLSearchParams();
    if (document.body.classList.contains('projector')) p.set('projector', '1');
    if (extraParams) extraParams(p);
    var qs = p.toString();
    var url = window.location.pathname + (qs ? '?' + qs : '') + window.location.hash;
    try { window.history.replaceState(null, '', url); } catch (e) { /* file:// or sandboxed */ }
  }

  function setupProjector() {
    var b = document.getElementById('projector');
    function set(on) {
      document.body.classList.toggle('projector', on);
      /* the other page opens in the same mode */
      document.querySelectorAll('a[data-page-link]').forEach(function (a) {
        a.setAttribute('href', a.getAttribute('data-page-link') + (on ? '?projector=1' : ''));
      });
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
      b.textContent = on ? 'Normal size' : 'Projector mode';
    }
    set(params.get('projector') === '1');
    b.addEventListener('click', function () {
      set(!document.body.classList.contains('projector'));
      writeUrl();
    });
  }

  /* ---- the lessons -------------------------------------------------------- */

  function Panel(lesson) {
    var self = this;
    this.lesson = lesson;
    this.id = lesson.id;
    this.knobs = {};
    this.inputs = {};
    var pre = this.id + '.';
    lesson.controls.forEach(function (c) {
      var idx = indexOf(c.values, c.default);
      var q = params.get(pre + c.name);
      if (q !== null) {
        var qi = indexOf(c.values, Number(q));
        if (q !== '' && qi >= 0) idx = qi;
      }
      self.knobs[c.name] = idx >= 0 ? idx : 0;
    });
    var seed = Number(lesson.seed) || 1;
    var qs = params.get(pre + 'seed');
    if (qs !== null && /^[0-9]+$/.test(qs) && Number(qs) >= 1 && Number(qs) <= 1000000) seed = Number(qs);
    this.seed = seed;
    this.changedAt = performance.now(); /* the first answer's wait counts from here */
    this.build();
    this.req = new Requester(function () { return '/api/lesson?' + self.queryString(); },
                             function (s, b) { self.show(s, b); },
                             function () { self.loading(); });
  }

  function indexOf(values, v) {
    for (var i = 0; i < values.length; i++) if (values[i] === v) return i;
    for (i = 0; i < values.length; i++)
      if (Math.abs(values[i] - v) <= 1e-12 * Math.max(1, Math.abs(v))) return i;
    return -1;
  }

  Panel.prototype.queryString = function (extra) {
    var self = this;
    var p = new URLSearchParams();
    p.set('name', this.id);
    this.lesson.controls.forEach(function (c) { p.set(c.name, dec(c.values[self.knobs[c.name]])); });
    p.set('seed', String(this.seed));
    if (extra) Object.keys(extra).forEach(function (k) { p.set(k, extra[k]); });
    return p.toString();
  };

  Panel.prototype.addParams = function (p) {
    var self = this;
    this.lesson.controls.forEach(function (c) {
      p.set(self.id + '.' + c.name, dec(c.values[self.knobs[c.name]]));
    });
    p.set(this.id + '.seed', String(this.seed));
  };

  Panel.prototype.build = function () {
    var self = this, id = this.id, l = this.lesson;
    var sec = el('section', {
      'class': 'panel lesson', id: 'lesson-' + id, 'data-lesson': id, 'data-state': 'loading',
      'data-sets': '[]', 'data-quick': l.quick ? 'true' : 'false', 'aria-labelledby': id + '-title',
      'aria-busy': 'true'
    });
    this.section = sec;
    var head = el('div', {'class': 'panel-head'},
      el('h2', {id: id + '-title'}, TITLES[id] || id, el('span', {'class': 'lesson-id', text: ' \u00b7 ' + id})),
      el('p', {'class': 'summary-line', text: l.summary ? l.summary.charAt(0).toUpperCase() + l.summary.slice(1) : ''}));
    sec.appendChild(head);

    var body = el('div', {'class': 'panel-body'});
    var left = el('div', {'class': 'panel-left'});
    var right = el('div', {'class': 'panel-right'});
    var text = el('div', {'class': 'panel-text'});
    body.appendChild(left);
    body.appendChild(right);
    body.appendChild(text);
    sec.appendChild(body);

    if (HINTS[id]) left.appendChild(el('p', {'class': 'hint', text: HINTS[id]}));
    var controls = el('div', {'class': 'controls'});
    left.appendChild(controls);
    l.controls.forEach(function (c) { controls.appendChild(self.buildControl(c)); });

    this.seedText = el('span', {'class': 'seed-value', text: String(this.seed)});
    var reroll = el('button', {type: 'button', 'data-action': 'reroll', 'class': 'reroll',
                               'aria-describedby': id + '-seed'}, 'Re-roll the seed');
    reroll.addEventListener('click', function () {
      self.seed = randomSeed(self.seed);
      self.seedText.textContent = String(self.seed);
      self.changed();
    });
    controls.appendChild(el('div', {'class': 'control seed'},
      el('span', {id: id + '-seed', 'class': 'seed-label'}, 'seed ', this.seedText), reroll));

    this.status = el('p', {'class': 'status', role: 'status', text: 'computing\u2026'});
    this.error = el('p', {'class': 'error', role: 'alert', hidden: true});
    left.appendChild(this.status);
    left.appendChild(this.error);

    this.findings = el('ul', {'class': 'findings', 'aria-label': 'what the numbers say'});
    text.appendChild(this.findings);
    this.numbers = el('dl', {'class': 'numbers', id: id + '-numbers', 'aria-labelledby': id + '-numbers-title'});
    text.appendChild(el('div', {'class': 'numbers-box'},
      el('h3', {id: id + '-numbers-title', text: 'the numbers behind the sentences'}), this.numbers));

    this.svgHost = el('div', {'class': 'svg-host'});
    this.svgLink = el('a', {'class': 'button-link small', download: id + '.svg', href: '#'}, 'Save figure (SVG)');
    this.pngLink = el('a', {'class': 'button-link small', download: id + '.png', href: '#'}, 'Save figure (PNG)');
    right.appendChild(el('figure', {'class': 'figure'}, this.svgHost,
      el('figcaption', {'class': 'figure-tools'}, this.svgLink, ' ', this.pngLink)));

    this.tableHost = el('div', {'class': 'table-host', tabindex: '0', role: 'region',
                                'aria-label': (TITLES[id] || id) + ': the table'});
    sec.appendChild(this.tableHost);
    this.cmd = el('code');
    sec.appendChild(el('details', {'class': 'cmd'}, el('summary', {text: 'command line'}), el('pre', null, this.cmd)));
    this.updateLinks();
  };

  Panel.prototype.buildControl = function (c) {
    var self = this, cid = this.id + '-' + c.name;
    var label = c.label;
    if (c.unit && (' ' + c.label + ' ').indexOf(' ' + c.unit + ' ') < 0) label += ' (' + c.unit + ')';
    if (c.kind === 'choice') {
      var group = el('div', {'class': 'buttons', role: 'group', 'aria-labelledby': cid + '-label'});
      var buttons = [];
      c.values.forEach(function (v, i) {
        var b = el('button', {type: 'button', 'data-control': c.name, 'data-index': String(i),
                              'data-value': String(v), 'aria-pressed': i === self.knobs[c.name] ? 'true' : 'false'},
                   shown(c, i));
        b.addEventListener('click', function () {
          self.knobs[c.name] = i;
          buttons.forEach(function (o, j) { o.setAttribute('aria-pressed', j === i ? 'true' : 'false'); });
          self.changed();
        });
        buttons.push(b);
        group.appendChild(b);
      });
      this.inputs[c.name] = {buttons: buttons};
      return el('div', {'class': 'control choice'},
                el('label', {id: cid + '-label', 'class': 'control-label'}, label), group);
    }
    var i0 = this.knobs[c.name];
    var input = el('input', {type: 'range', id: cid, min: '0', max: String(c.values.length - 1), step: '1',
                             value: String(i0), 'data-control': c.name, 'aria-valuetext': shown(c, i0)});
    var out = el('output', {'for': cid, 'class': 'control-value', text: shown(c, i0)});
    input.addEventListener('input', function () {
      var i = Number(input.value);
      if (i === self.knobs[c.name]) return;
      self.knobs[c.name] = i;
      out.textContent = shown(c, i);
      input.setAttribute('aria-valuetext', shown(c, i));
      self.changed();
    });
    this.inputs[c.name] = {input: input, output: out};
    var ends = el('div', {'class': 'range-ends', 'aria-hidden': 'true'},
                  el('span', {text: shown(c, 0)}), el('span', {text: shown(c, c.values.length - 1)}));
    return el('div', {'class': 'control range'},
              el('div', {'class': 'control-top'}, el('label', {'for': cid, 'class': 'control-label'}, label), out),
              input, ends);
  };

  Panel.prototype.changed = function () {
    if (this.changedAt === null) this.changedAt = performance.now();
    this.updateLinks();
    writeUrl();
    this.req.ask();
  };

  Panel.prototype.updateLinks = function () {
    this.svgLink.href = '/api/figure?' + this.queryString({format: 'svg'});
    this.pngLink.href = '/api/figure?' + this.queryString({format: 'png'});
  };

  Panel.prototype.loading = function () {
    this.section.setAttribute('data-state', 'loading');
    this.section.setAttribute('aria-busy', 'true');
    this.status.textContent = 'computing\u2026';
  };

  Panel.prototype.show = function (status, b) {
    var sec = this.section;
    sec.setAttribute('aria-busy', 'false');
    if (status !== 200 || !b || b.error) {
      this.error.textContent = errorText(status, b);
      this.error.hidden = false;
      this.status.textContent = 'not computed';
      this.changedAt = null;
      sec.setAttribute('data-state', 'error');
      return;
    }
    this.error.hidden = true;
    this.renderFindings(b.findings || []);
    this.renderNumbers(b.numbers || {});
    this.renderTable(b.table || [], b.columns || []);
    putSvg(this.svgHost, b.svg);
    var sets = b.sets || [];
    var line = 'servesim lesson ' + this.id + ' --json';
    sets.forEach(function (s) { line += " --set '" + s + "'"; });
    if (b.quick) line += ' --quick';
    this.cmd.textContent = line;
    var ms = Number(b.elapsed_ms);
    this.status.textContent = 'computed in ' + (isFinite(ms) ? Math.round(ms) + ' ms' : '?') +
      (b.quick ? ' (its quick size)' : '');
    sec.setAttribute('data-sets', JSON.stringify(sets));
    sec.setAttribute('data-quick', b.quick ? 'true' : 'false');
    sec.setAttribute('data-elapsed-ms', String(b.elapsed_ms));
    if (this.changedAt !== null) {
      /* from the control's move to the answer shown, the debounce included */
      sec.setAttribute('data-update-ms', String(Math.round(performance.now() - this.changedAt)));
      this.changedAt = null;
    }
    sec.setAttribute('data-state', 'ready');
  };

  Panel.prototype.renderFindings = function (f) {
    var ul = this.findings;
    ul.textContent = '';
    f.forEach(function (s) { ul.appendChild(el('li', {text: s})); });
  };

  Panel.prototype.renderNumbers = function (n) {
    var dl = this.numbers;
    dl.textContent = '';
    Object.keys(n).forEach(function (k) {
      var v = n[k];
      dl.appendChild(el('div', {'class': 'number'},
        el('dt', {text: humanName(k)}),
        el('dd', null, el('span', {'data-name': k, 'data-value': String(v), title: String(v), text: readable(v)}))));
    });
  };

  Panel.prototype.renderTable = function (rows, cols) {
    var host = this.tableHost;
    host.textContent = '';
    if (!cols.length) return;
    var thead = el('thead'), tr = el('tr');
    cols.forEach(function (c) {
      var text = rows.length && typeof rows[0][c.key] === 'string';
      tr.appendChild(el('th', {scope: 'col', 'class': text ? 'text' : 'num'}, c.header,
        c.unit ? el('span', {'class': 'unit', text: c.unit}) : null));
    });
    thead.appendChild(tr);
    var tbody = el('tbody');
    rows.forEach(function (r) {
      var row = el('tr');
      cols.forEach(function (c) {
        var v = r[c.key];
        row.appendChild(el('td', {'class': typeof v === 'number' ? 'num' : 'text', text: cell(v, c.decimals)}));
      });
      tbody.appendChild(row);
    });
    host.appendChild(el('table', null,
      el('caption', {text: (TITLES[this.id] || this.id) + ': one row per run of the sweep'}), thead, tbody));
  };

  function lessonsPage() {
    var main = document.getElementById('lessons');
    var status = document.getElementById('lessons-status');
    var toc = document.getElementById('toc');
    getJson('/api/lessons', function (st, b) {
      if (st !== 200 || !b || !Array.isArray(b.lessons)) {
        status.textContent = 'The lessons could not be loaded: ' + errorText(st, b);
        status.className = 'error';
        main.setAttribute('data-state', 'error');
        return;
      }
      if (b.file) {
        var link = document.getElementById('whatif-link');
        link.textContent = 'What-if for ' + b.file;
        link.hidden = false;
      }
      var panels = b.lessons.map(function (l) { return new Panel(l); });
      var list = el('ol');
      panels.forEach(function (p) {
        list.appendChild(el('li', null, el('a', {href: '#lesson-' + p.id, text: TITLES[p.id] || p.id})));
        main.appendChild(p.section);
      });
      toc.appendChild(list);
      status.remove();
      main.setAttribute('data-state', 'ready');
      extraParams = function (p) { panels.forEach(function (x) { x.addParams(p); }); };
      writeUrl();
      panels.forEach(function (p) { p.req.ask(true); });
      if (window.location.hash) {
        var t = document.getElementById(window.location.hash.slice(1));
        if (t) t.scrollIntoView();
      }
    });
  }

  /* ---- the what-if page -------------------------------------------------- */

  var METRICS = [
    {key: 'ttft', field: 'ttft_s', label: 'TTFT', name: 'time to first token',
     ladder: [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120]},
    {key: 'tpot', field: 'tpot_s', label: 'TPOT', name: 'time per output token',
     ladder: [0.001, 0.002, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2]},
    {key: 'e2e', field: 'e2e_s', label: 'E2E', name: 'end-to-end latency',
     ladder: [0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600]}
  ];

  /* A key --slo takes for a percentile or mean target, or the task SLO. */
  var TARGET_KEY = /^([A-Za-z0-9_-]+\.)?((ttft|tpot|tpot_incl_ttft|e2e)_(mean|p[0-9.]+)|task_e2e)$/;

  function seconds(v) {
    if (v === null || v === undefined) return 'no limit';
    if (v < 1) return readable(v) + ' s (' + readable(+(v * 1000).toPrecision(6)) + ' ms)';
    return readable(v) + ' s';
  }
  function secondsShort(v) {
    if (v === null || v === undefined) return 'no limit';
    return readable(v) + ' s';
  }

  function pct(x) {
    if (x === null || x === undefined || !isFinite(x)) return 'n/a';
    return (x * 100).toFixed(x >= 0.9995 && x < 1 ? 2 : 1) + '%';
  }

  function whatifPage() {
    var main = document.getElementById('whatif');
    var statusEl = document.getElementById('whatif-status');
    var errorEl = document.getElementById('whatif-error');
    var runSel = document.getElementById('run');
    var thresholdsHost = document.getElementById('thresholds');
    var metricHost = document.getElementById('metric');
    var summary = document.getElementById('summary');
    var classesHost = document.getElementById('classes');
    var figure = document.getElementById('whatif-figure');
    var cmd = document.getElementById('whatif-cmd');
    var file = null;
    var runs = [];
    var run = null;        /* the chosen run's id */
    var sliders = {};      /* key ("ttft", "chat.ttft") -> slider */
    var metric = ['ttft', 'tpot', 'e2e'].indexOf(params.get('metric')) >= 0 ? params.get('metric') : 'ttft';
    var fromUrl = {};      /* thresholds the address bar asked for, applied once */
    var targets = [];      /* [key, value]: the percentile targets and task SLO asked, as --slo takes them */
    params.forEach(function (v, k) {
      if (/^([A-Za-z0-9_.-]+\.)?(ttft|tpot|e2e)$/.test(k) && isFinite(Number(v)) && Number(v) > 0) fromUrl[k] = Number(v);
      else if (TARGET_KEY.test(k)) targets.push([k, v]);
    });
    var targetsInput = document.getElementById('targets');
    var targetsHost = document.getElementById('verdicts');
    targetsInput.value = targetsText();
    var generation = 0;    /* bumped when the run changes: answers for an old run are dropped */

    function setState(s) {
      main.setAttribute('data-state', s);
      main.setAttribute('aria-busy', s === 'loading' ? 'true' : 'false');
    }
    function fail(msg) {
      errorEl.textContent = msg;
      errorEl.hidden = false;
      statusEl.textContent = 'not computed';
      setState('error');
    }

    /* The metric buttons of the curve. */
    var metricButtons = METRICS.map(function (m) {
      var b = el('button', {type: 'button', 'data-metric': m.key, 'aria-pressed': m.key === metric ? 'true' : 'false'}, m.label);
      b.addEventListener('click', function () {
        metric = m.key;
        metricButtons.forEach(function (o) { o.setAttribute('aria-pressed', o === b ? 'true' : 'false'); });
        changed();
      });
      metricHost.appendChild(b);
      return b;
    });

    function addParams(p) {
      p.set('run', String(run));
      Object.keys(sliders).forEach(function (k) {
        var s = sliders[k];
        if (s.dirty && s.value() !== null) p.set(k, dec(s.value()));
      });
      targets.forEach(function (t) { p.set(t[0], t[1]); });
      p.set('metric', metric);
    }
    function query() {
      var p = new URLSearchParams();
      addParams(p);
      return '/api/whatif?' + p.toString();
    }

    extraParams = function (p) {
      if (run !== null) addParams(p);
    };

    /* The box holds a malformed target: its error stands until it is
     * fixed, whatever answer to an earlier question arrives meanwhile
     * (clearing the box asked one, which could land after the error). */
    var targetsBad = false;

    function targetsText() {
      return targets.map(function (t) { return t[0] + '=' + t[1]; }).join(' ');
    }
    /* "ttft_p99=2 e2e_p90=20s" (spaces or commas between): the server's
     * parser, --slo's, judges each value; here only the shape. */
    targetsInput.addEventListener('change', function () {
      var parsed = [], bad = null;
      targetsInput.value.split(/[\s,]+/).forEach(function (w) {
        if (!w) return;
        var eq = w.indexOf('=');
        if (eq > 0 && TARGET_KEY.test(w.slice(0, eq))) parsed.push([w.slice(0, eq), w.slice(eq + 1)]);
        else if (bad === null) bad = w;
      });
      targetsBad = bad !== null;
      if (targetsBad) {
        fail(bad + ': expected a target as report --slo takes it (ttft_p99=2, e2e_p90=20s, ' +
             'chat.ttft_p99=500ms, task_e2e=30s)');
        return;
      }
      targets = parsed;
      changed();
    });

    var req = new Requester(query, function (st, b) { show(st, b); }, function () {
      setState('loading');
      statusEl.textContent = 'computing\u2026';
    });

    var changedAt = null;
    function changed() {
      if (run === null) return; /* no run yet: nothing to recompute */
      if (changedAt === null) changedAt = performance.now();
      writeUrl();
      req.ask();
    }

    /* One threshold slider over a metric's ladder of values (seconds);
     * null, "no limit", as the last position where the run has none. */
    function Slider(key, m, ladder, groupLabel) {
      var self = this;
      this.key = key;
      this.m = m;
      this.ladder = ladder;
      this.dirty = false;
      var id = 'slo-' + key.replace(/[^A-Za-z0-9_-]/g, '-');
      this.input = el('input', {type: 'range', id: id, min: '0', max: String(ladder.length - 1), step: '1',
                                value: '0', 'data-slo': key});
      this.out = el('output', {'for': id, 'class': 'control-value'});
      this.input.addEventListener('input', function () {
        self.dirty = true;
        self.render();
        changed();
      });
      this.node = el('div', {'class': 'control range'},
        el('div', {'class': 'control-top'},
          el('label', {'for': id, 'class': 'control-label', title: m.name},
             (groupLabel ? groupLabel + ' ' : '') + m.label + ' threshold (seconds)'),
          this.out),
        this.input,
        el('div', {'class': 'range-ends', 'aria-hidden': 'true'},
           el('span', {text: secondsShort(ladder[0])}), el('span', {text: secondsShort(ladder[ladder.length - 1])})));
    }
    Slider.prototype.value = function () { return this.ladder[Number(this.input.value)]; };
    Slider.prototype.render = function () {
      var t = seconds(this.value());
      this.out.textContent = t;
      this.input.setAttribute('aria-valuetext', t);
    };
    /* Shows the threshold in force, v (null: none), unless the user moved it. */
    Slider.prototype.follow = function (v) {
      if (this.dirty) return;
      var i = -1, best = Infinity;
      for (var j = 0; j < this.ladder.length; j++) {
        var x = this.ladder[j];
        if (v === null || v === undefined) { if (x === null) i = j; continue; }
        if (x === null) continue;
        var d = Math.abs(Math.log(x / v));
        if (d < best) { best = d; i = j; }
      }
      if (i < 0) i = this.ladder.length - 1;
      this.input.value = String(i);
      this.render();
    };
    Slider.prototype.set = function (v) {
      var i = this.ladder.indexOf(v);
      if (i < 0) return;
      this.input.value = String(i);
      this.dirty = true;
      this.render();
    };

    /* The ladder of a metric: its standard values, the ones this run uses
     * and the ones the address bar asks for; null last when some are unset. */
    function ladderFor(m, report) {
      var vals = m.ladder.slice(), hasNull = false;
      function add(v) {
        if (v === null || v === undefined) { hasNull = true; return; }
        if (typeof v === 'number' && v > 0 && vals.indexOf(v) < 0) vals.push(v);
      }
      add(report.slo ? report.slo[m.field] : null);
      var cls = report.classes || {};
      Object.keys(cls).forEach(function (c) { add(cls[c].slo ? cls[c].slo[m.field] : null); });
      Object.keys(fromUrl).forEach(function (k) {
        if (k === m.key || k.slice(-(m.key.length + 1)) === '.' + m.key) add(fromUrl[k]);
      });
      vals.sort(function (a, b) { return a - b; });
      if (hasNull) vals.push(null);
      return vals;
    }

    function classNames(report, runInfo) {
      var names = runInfo && Array.isArray(runInfo.classes) ? runInfo.classes.slice() : [];
      Object.keys(report.classes || {}).forEach(function (c) { if (names.indexOf(c) < 0) names.push(c); });
      return names;
    }

    function buildSliders(report, runInfo) {
      sliders = {};
      thresholdsHost.textContent = '';
      var overall = el('fieldset', {'class': 'group'}, el('legend', {text: 'every request'}));
      var ladders = {};
      METRICS.forEach(function (m) {
        ladders[m.key] = ladderFor(m, report);
        var s = new Slider(m.key, m, ladders[m.key], '');
        sliders[m.key] = s;
        overall.appendChild(s.node);
      });
      thresholdsHost.appendChild(overall);
      var names = classNames(report, runInfo);
      if (names.length) {
        var perClass = el('details', {'class': 'per-class', open: names.length <= 3},
                          el('summary', {text: 'per class (' + names.join(', ') + ')'}));
        names.forEach(function (c) {
          var g = el('fieldset', {'class': 'group', 'data-class': c}, el('legend', {text: 'class ' + c}));
          METRICS.forEach(function (m) {
            var s = new Slider(c + '.' + m.key, m, ladders[m.key], c);
            sliders[c + '.' + m.key] = s;
            g.appendChild(s.node);
          });
          perClass.appendChild(g);
        });
        thresholdsHost.appendChild(perClass);
      }
      follow(report);
      Object.keys(fromUrl).forEach(function (k) { if (sliders[k]) sliders[k].set(fromUrl[k]); });
      fromUrl = {};
    }

    function follow(report) {
      METRICS.forEach(function (m) {
        if (sliders[m.key]) sliders[m.key].follow(report.slo ? report.slo[m.field] : null);
      });
      var cls = report.classes || {};
      Object.keys(sliders).forEach(function (k) {
        var dot = k.lastIndexOf('.');
        if (dot < 0) return;
        var c = k.slice(0, dot), mk = k.slice(dot + 1);
        var m = METRICS.filter(function (x) { return x.key === mk; })[0];
        var slo = cls[c] && cls[c].slo;
        sliders[k].follow(slo ? slo[m.field] : null);
      });
    }

    function valueSpan(name, v, text) {
      return el('span', {'data-name': name, 'data-value': String(v), title: String(v), text: text});
    }

    function thresholdsText(slo) {
      if (!slo) return '';
      var parts = [];
      METRICS.forEach(function (m) {
        if (slo[m.field] !== null && slo[m.field] !== undefined) parts.push(m.label + ' \u2264 ' + secondsShort(slo[m.field]));
      });
      return parts.length ? parts.join(', ') : 'no thresholds';
    }

    /* Each target's verdict as report prints it: met or not, the value with
     * every request in, and the margin; then the agent tasks' SLO. */
    function showVerdicts(rep) {
      targetsHost.textContent = '';
      var list = el('ul', {'class': 'verdicts'});
      ((rep.slo && rep.slo.targets) || []).forEach(function (t) {
        var stat = t.statistic === 'mean' ? 'mean' : 'p' + readable(t.percentile);
        var key = (t['class'] ? t['class'] + '.' : '') + t.metric + '_' + stat;
        var value = t.value_all === 'infinite' ? 'infinite (requests not completed count as infinitely late)'
                    : t.value_all_s === null ? 'nothing measured' : secondsShort(t.value_all_s);
        var margin = t.margin_s === null || t.margin_s === undefined ? '' :
                     ' (margin ' + (t.margin_s >= 0 ? '+' : '\u2212') + secondsShort(Math.abs(t.margin_s)) + ')';
        list.appendChild(el('li', {'data-target': key, 'data-met': t.met ? 'true' : 'false',
                                   'data-margin': String(t.margin_s), 'data-source': t.source,
                                   'class': t.met ? 'met' : 'not-met'},
          el('span', {'class': 'verdict', text: t.met ? 'met' : 'NOT met'}),
          el('span', {text: ' ' + (t['class'] ? t['class'] + ' ' : '') + t.metric + ' ' + stat + ' \u2264 ' +
                      secondsShort(t.threshold_s) + ': ' + value + margin +
                      (t.source === 'scenario' ? ', the scenario\'s target' : '')})));
      });
      var ts = rep.tasks && rep.tasks.slo;
      if (ts && ts.attainment !== null && ts.attainment !== undefined) {
        list.appendChild(el('li', {'data-target': 'task_e2e', 'data-attainment': String(ts.attainment)},
          el('span', {text: 'agent tasks within ' + (ts.task_e2e_s === null ? "each class's target" :
                      secondsShort(ts.task_e2e_s)) + ': ' + pct(ts.attainment) + ', goodput ' +
                      readable(ts.goodput_tasks_per_s) + ' tasks/s'})));
      }
      if (list.childNodes.length) targetsHost.appendChild(list);
    }

    function show(st, b) {
      main.setAttribute('aria-busy', 'false');
      if (targetsBad) return;
      if (st !== 200 || !b || b.error || !b.report) { changedAt = null; fail(errorText(st, b)); return; }
      errorEl.hidden = true;
      var rep = b.report;
      follow(rep);
      var slo = rep.slo || {};
      summary.textContent = '';
      summary.appendChild(el('div', {'class': 'big-number'},
        el('span', {'class': 'big-label', text: 'attainment'}),
        valueSpan('attainment', slo.attainment, pct(slo.attainment)),
        el('span', {'class': 'big-note', text: 'of measured requests met ' + thresholdsText(slo)})));
      summary.appendChild(el('div', {'class': 'big-number'},
        el('span', {'class': 'big-label', text: 'goodput'}),
        valueSpan('goodput_requests_per_s', slo.goodput_requests_per_s, readable(slo.goodput_requests_per_s) + ' req/s'),
        el('span', {'class': 'big-note', text: 'requests a second that met them' +
          (rep.throughput && isFinite(rep.throughput.requests_per_s) ?
            ', of ' + readable(rep.throughput.requests_per_s) + ' req/s served' : '')})));
      classesHost.textContent = '';
      var cls = rep.classes || {};
      var names = Object.keys(cls);
      if (names.length) {
        var tbody = el('tbody');
        names.forEach(function (c) {
          var s = cls[c].slo || {};
          tbody.appendChild(el('tr', {'data-class': c},
            el('th', {scope: 'row', text: c}),
            el('td', {'class': 'text', text: thresholdsText(s)}),
            el('td', {'class': 'num'}, valueSpan(c + '.attainment', s.attainment, pct(s.attainment))),
            el('td', {'class': 'num'}, valueSpan(c + '.goodput_requests_per_s', s.goodput_requests_per_s,
                                                 readable(s.goodput_requests_per_s)))));
        });
        classesHost.appendChild(el('div', {'class': 'table-host', tabindex: '0', role: 'region', 'aria-label': 'per class'},
          el('table', null, el('caption', {text: 'per class'}),
            el('thead', null, el('tr', null,
              el('th', {scope: 'col', 'class': 'text', text: 'class'}),
              el('th', {scope: 'col', 'class': 'text', text: 'thresholds'}),
              el('th', {scope: 'col'}, 'attainment', el('span', {'class': 'unit', text: '%'})),
              el('th', {scope: 'col'}, 'goodput', el('span', {'class': 'unit', text: 'req/s'})))),
            tbody)));
      }
      showVerdicts(rep);
      putSvg(figure, b.svg);
      var args = Array.isArray(b.slo_args) ? b.slo_args : [];
      var line = 'servesim report ' + (file || 'FILE.db') + ' --run ' + b.run + ' --by class --json';
      args.forEach(function (a) { line += ' --slo ' + a; });
      cmd.textContent = line;
      statusEl.textContent = 'run ' + b.run + ': recomputed from the database';
      main.setAttribute('data-slo-args', JSON.stringify(args));
      main.setAttribute('data-run', String(b.run));
      if (changedAt !== null) {
        main.setAttribute('data-update-ms', String(Math.round(performance.now() - changedAt)));
        changedAt = null;
      }
      setState('ready');
    }

    /* Picks a run: asks its stored thresholds first, builds the sliders on them. */
    function pick(id) {
      run = id;
      var gen = ++generation;
      var info = runs.filter(function (r) { return r.id === id; })[0];
      setState('loading');
      statusEl.textContent = 'loading run ' + id + '\u2026';
      sliders = {};
      getJson('/api/whatif?run=' + encodeURIComponent(id) + '&metric=' + metric, function (st, b) {
        if (gen !== generation) return;
        if (st !== 200 || !b || !b.report) { fail(errorText(st, b)); return; }
        buildSliders(b.report, info);
        writeUrl();
        if (targets.length || Object.keys(sliders).some(function (k) { return sliders[k].dirty; })) req.ask(true);
        else show(st, b);
      });
    }

    runSel.addEventListener('change', function () {
      fromUrl = {};
      pick(Number(runSel.value));
    });

    getJson('/api/runs', function (st, b) {
      if (st !== 200 || !b || !Array.isArray(b.runs)) {
        fail(st === 404 && !(b && b.error) ? 'No database: start servesim explore with a FILE.db to question its runs.'
             : errorText(st, b));
        return;
      }
      file = b.file || null;
      runs = b.runs;
      if (!runs.length) { fail('The database holds no runs.'); return; }
      runs.forEach(function (r) {
        runSel.appendChild(el('option', {value: String(r.id),
          text: 'run ' + r.id + ': ' + (r.name || '') + ' (' + (r.status || '?') + ')'}));
      });
      var want = Number(params.get('run'));
      var first = runs.filter(function (r) { return r.id === want; }).length ? want : runs[runs.length - 1].id;
      runSel.value = String(first);
      pick(first);
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    setupProjector();
    if (document.body.getAttribute('data-page') === 'whatif') whatifPage();
    else lessonsPage();
  });
})();
