#!/usr/bin/env python3
"""The explore page in a real browser (headless Chromium through Selenium).

usage: test_browser.py SERVESIM SOURCE_ROOT ARTIFACT_DIR

Makes a database of examples/agents.json, starts `SERVESIM explore --port 0
DB`, loads the page, moves each lesson panel's first slider and checks that
its numbers change to what `servesim lesson NAME --json` prints for the same
--set knobs, that its figure is drawn and its sentences are the CLI's;
checks the permalink, the seed re-roll and projector mode; moves the what-if
page's TTFT threshold and checks attainment and goodput against
`servesim report --slo`, and its percentile targets' verdicts (from the
address bar and typed) against `report --slo ttft_p99=2`'s; and that the
browser logged no error.  A screenshot of each panel goes to
ARTIFACT_DIR/explore-ID.png (and explore-whatif.png,
explore-whatif-targets.png, explore-projector.png).  Stopping the server with
SIGINT must give exit status 130 and leave nothing in its folder.

TAP output.  Without selenium, chromium or chromedriver it prints
"1..0 # SKIP ..." and exits 0.
"""

import base64
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request

LESSONS = ['two-clocks', 'chat-vs-summary', 'batching', 'speculation', 'utilisation', 'tail', 'priorities', 'memory', 'day', 'fan-out', 'definitions']
WAIT_S = 30          # the longest any one wait may take
CLI_TIMEOUT_S = 60


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, cond, desc, diag=None):
        self.n += 1
        if cond:
            print('ok %d - %s' % (self.n, desc), flush=True)
        else:
            self.failed += 1
            print('not ok %d - %s' % (self.n, desc), flush=True)
            if diag:
                for line in str(diag).splitlines()[:40]:
                    print('#   ' + line, flush=True)
        return bool(cond)

    def diag(self, text):
        for line in str(text).splitlines():
            print('# ' + line, flush=True)

    def finish(self):
        print('1..%d' % self.n, flush=True)
        return 1 if self.failed else 0


def skip(why):
    print('1..0 # SKIP ' + why, flush=True)
    return 0


def find_browser():
    """(chromium, chromedriver) paths, or a reason why not."""
    chromium = os.environ.get('SERVESIM_CHROMIUM')
    if chromium and not os.access(chromium, os.X_OK):
        return None, None, 'SERVESIM_CHROMIUM=%s is not an executable' % chromium
    if not chromium:
        for name in ('chromium', 'chromium-browser', 'google-chrome'):
            chromium = shutil.which(name)
            if chromium:
                break
    if not chromium and os.access('/usr/bin/chromium', os.X_OK):
        chromium = '/usr/bin/chromium'
    driver = os.environ.get('SERVESIM_CHROMEDRIVER')
    if driver and not os.access(driver, os.X_OK):
        return None, None, 'SERVESIM_CHROMEDRIVER=%s is not an executable' % driver
    driver = driver or shutil.which('chromedriver')
    if not driver and os.access('/usr/bin/chromedriver', os.X_OK):
        driver = '/usr/bin/chromedriver'
    if not chromium:
        return None, None, 'chromium is not installed'
    if not driver:
        return None, None, 'chromedriver is not installed (Debian: chromium-driver)'
    return chromium, driver, None


def same_number(page_text, cli_value):
    """The page's data-value (String(x) of the JSON number) against the CLI's
    JSON value: floats within 1e-12 relative, null as null."""
    if cli_value is None:
        return page_text == 'null'
    if isinstance(cli_value, bool):
        return page_text == ('true' if cli_value else 'false')
    if isinstance(cli_value, (int, float)):
        try:
            v = float(page_text)
        except ValueError:
            return False
        c = float(cli_value)
        if math.isnan(c) or math.isnan(v):
            return False
        return v == c or abs(v - c) <= 1e-12 * max(abs(v), abs(c))
    return page_text == str(cli_value)


def compare_values(shown, expected):
    """shown: {name: data-value text}; expected: {name: JSON value}.  The
    list of differences, empty when they agree."""
    bad = []
    for name, text in sorted(shown.items()):
        if name not in expected:
            bad.append('%s: shown %s, not in the CLI output' % (name, text))
        elif not same_number(text, expected[name]):
            bad.append('%s: page %s, CLI %s' % (name, text, json.dumps(expected[name])))
    return bad


def ms(text):
    try:
        return '%.0f' % float(text)
    except (TypeError, ValueError):
        return '?'


def norm_space(s):
    return ' '.join(s.split())


class Server:
    """`servesim explore` as a child process, its output drained by threads."""

    def __init__(self, servesim, db, cwd):
        # a computation may take 60 s, not 10: a sanitizer build on a loaded
        # machine runs a lesson several times slower
        self.proc = subprocess.Popen([servesim, 'explore', '--port', '0', '--time-limit', '60', db], cwd=cwd,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.err = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line)

    def first_line(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def get_json(url):
    with urllib.request.urlopen(url, timeout=WAIT_S) as r:
        return json.loads(r.read().decode('utf-8'))


def run_cli(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    if r.returncode != 0:
        raise RuntimeError('%s: exit %d: %s' % (' '.join(args), r.returncode, r.stderr.strip()[:500]))
    return json.loads(r.stdout)


JS_PANELS = """
return Array.from(document.querySelectorAll('section[data-lesson]')).map(function (s) {
  return [s.getAttribute('data-lesson'), s.getAttribute('data-state')];
});
"""

JS_PANEL = """
var s = document.querySelector('section[data-lesson="' + arguments[0] + '"]');
if (!s) return null;
var values = {};
s.querySelectorAll('[data-value][data-name]').forEach(function (e) {
  values[e.getAttribute('data-name')] = e.getAttribute('data-value');
});
var range = s.querySelector('input[type="range"]');
return {state: s.getAttribute('data-state'), sets: s.getAttribute('data-sets'),
        quick: s.getAttribute('data-quick'), elapsed: s.getAttribute('data-elapsed-ms'),
        update: s.getAttribute('data-update-ms'),
        values: values,
        findings: Array.from(s.querySelectorAll('.findings li')).map(function (e) { return e.textContent; }),
        range: range ? {value: range.value, min: range.min, max: range.max, id: range.id} : null,
        error: (s.querySelector('.error:not([hidden])') || {}).textContent || null,
        series: s.querySelectorAll('svg polyline.series').length,
        rows: s.querySelectorAll('table tbody tr').length,
        figure: Array.from(s.querySelectorAll('a[href*="/api/figure"]')).map(function (a) { return a.href; })};
"""

JS_LABELS = """
var bad = [];
document.querySelectorAll('section[data-lesson]').forEach(function (s) {
  var id = s.getAttribute('data-lesson');
  s.querySelectorAll('input[type="range"]').forEach(function (i) {
    var l = i.id ? document.querySelector('label[for="' + i.id + '"]') : null;
    if (!l || !l.textContent.trim()) bad.push(id + ': a slider without a visible label');
    else if (l.getBoundingClientRect().width === 0) bad.push(id + ': the label of ' + i.id + ' is not visible');
  });
  s.querySelectorAll('[role="group"]').forEach(function (g) {
    var ref = g.getAttribute('aria-labelledby');
    var l = ref ? document.getElementById(ref) : null;
    if (!l || l.tagName !== 'LABEL' || !l.textContent.trim()) bad.push(id + ': buttons without a visible label');
  });
  if (!s.querySelector('[data-action="reroll"]')) bad.push(id + ': no re-roll button');
  var links = Array.from(s.querySelectorAll('a[href*="/api/figure"]')).map(function (a) { return a.href; });
  if (!links.some(function (h) { return /format=svg/.test(h); }) || !links.some(function (h) { return /format=png/.test(h); }))
    bad.push(id + ': no save-figure links for SVG and PNG');
});
return bad;
"""

JS_WHATIF = """
var m = document.querySelector('[data-slo-args]');
if (!m) return null;
var values = {};
m.querySelectorAll('[data-value][data-name]').forEach(function (e) {
  values[e.getAttribute('data-name')] = e.getAttribute('data-value');
});
var t = m.querySelector('input[type="range"][data-slo="ttft"]');
return {state: m.getAttribute('data-state'), args: m.getAttribute('data-slo-args'), values: values,
        update: m.getAttribute('data-update-ms'),
        ttft: t ? {value: t.value, min: t.min, max: t.max} : null,
        series: m.querySelectorAll('svg polyline.series, svg polyline').length,
        error: (m.querySelector('.error:not([hidden])') || {}).textContent || null};
"""

JS_VERDICTS = """
var l = document.querySelectorAll('#verdicts li[data-met]');
if (!l.length || document.querySelector('#whatif').getAttribute('data-state') !== 'ready') return null;
return Array.prototype.map.call(l, function (e) {
  return {key: e.getAttribute('data-target'), met: e.getAttribute('data-met'),
          margin: e.getAttribute('data-margin'), source: e.getAttribute('data-source'), text: e.textContent};
});
"""


def main():
    if len(sys.argv) != 4:
        sys.stderr.write('usage: test_browser.py SERVESIM SOURCE_ROOT ARTIFACT_DIR\n')
        return 2
    servesim, src, artifacts = (os.path.abspath(a) for a in sys.argv[1:])
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.support.ui import Select, WebDriverWait
    except ImportError:
        # Debian's python3-selenium lives in the system interpreter's
        # dist-packages; a python3 of another installation can still use it
        sys.path.append('/usr/lib/python3/dist-packages')
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.options import Options
            from selenium.webdriver.chrome.service import Service
            from selenium.webdriver.common.by import By
            from selenium.webdriver.common.keys import Keys
            from selenium.webdriver.support.ui import Select, WebDriverWait
        except ImportError:
            return skip('python3-selenium is not installed')
    chromium, chromedriver, why = find_browser()
    if why:
        return skip(why)
    os.makedirs(artifacts, exist_ok=True)

    t = Tap()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='servesim-browser-')
    db = os.path.join(tmp, 'agents.db')
    server = None
    driver = None
    console = []   # every browser log entry: (where, entry)

    def drain(where):
        try:
            for e in driver.get_log('browser'):
                console.append((where, e))
        except Exception as e:  # a driver without the log: say so once
            console.append((where, {'level': 'INFO', 'message': 'no browser log: %s' % e}))

    try:
        # 1. the database
        r = subprocess.run([servesim, 'run', os.path.join(src, 'examples', 'agents.json'), '-o', db, '-q'],
                           cwd=tmp, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        if not t.check(r.returncode == 0 and os.path.exists(db), 'servesim run examples/agents.json -o DB',
                       r.stderr):
            return t.finish()
        before = sorted(os.listdir(tmp))

        # 2. the server
        server = Server(servesim, db, tmp)
        line = server.first_line(WAIT_S) or ''
        m = re.match(r'^servesim explore: (http://127\.0\.0\.1:(\d+)/)\s*$', line)
        if not t.check(m is not None, 'servesim explore --port 0 DB prints its URL',
                       'first line: %r\nstderr: %s' % (line, ''.join(server.err))):
            return t.finish()
        url = m.group(1)
        api = get_json(url + 'api/lessons')
        controls = {l['id']: l['controls'] for l in api['lessons']}
        runs = get_json(url + 'api/runs')['runs']

        # 3. the browser
        opts = Options()
        opts.binary_location = chromium
        for a in ('--headless=new', '--no-sandbox', '--disable-gpu', '--window-size=1280,900',
                  '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
                  '--disable-extensions', '--disable-background-networking', '--lang=en-US',
                  '--force-device-scale-factor=1'):
            opts.add_argument(a)
        opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
        try:
            driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
        except Exception as e:
            t.check(False, 'headless Chromium starts', e)
            return t.finish()
        t.check(True, 'headless Chromium starts')
        driver.set_page_load_timeout(WAIT_S)
        driver.set_script_timeout(WAIT_S)

        def wait(pred, timeout=WAIT_S):
            try:
                return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: pred())
            except Exception:
                return None

        def click(e):
            driver.execute_script('arguments[0].scrollIntoView({block: "center"});', e)
            try:
                e.click()
            except Exception:  # covered by something: a click is still a click
                driver.execute_script('arguments[0].click();', e)

        def shoot(elem, path):
            """The whole element, beyond the window if it is taller."""
            r = driver.execute_script(
                'var r = arguments[0].getBoundingClientRect();'
                'return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];', elem)
            try:
                data = driver.execute_cdp_cmd('Page.captureScreenshot', {
                    'format': 'png', 'captureBeyondViewport': True,
                    'clip': {'x': r[0], 'y': r[1], 'width': r[2], 'height': r[3], 'scale': 1}})
                with open(path, 'wb') as f:
                    f.write(base64.b64decode(data['data']))
            except Exception:
                elem.screenshot(path)
            return os.path.getsize(path)

        def all_ready():
            p = driver.execute_script(JS_PANELS)
            return p if p and len(p) == len(LESSONS) and all(s == 'ready' for _, s in p) else None

        # 4. the page, each panel
        driver.get(url)
        t0 = time.monotonic()
        # the day panel runs up to twelve compressed days a move, the slowest panel
        # (docs/explore.md), and the panels after it wait for it
        ok = wait(all_ready, timeout=4 * WAIT_S)
        p = driver.execute_script(JS_PANELS)
        t.check(ok and sorted(x for x, _ in p) == sorted(LESSONS),
                'the page shows the %d lessons as panels, all ready (%.1f s)' % (len(LESSONS), time.monotonic() - t0), p)
        drain('load')
        bad = driver.execute_script(JS_LABELS)
        t.check(not bad, 'every control is labelled; every panel has a re-roll button and save-figure links',
                '\n'.join(bad))
        links = driver.find_elements(By.CSS_SELECTOR, 'a[href*="whatif.html"]')
        t.check(any(a.is_displayed() for a in links), 'the page links to the what-if page (a database was given)')

        latencies = {}
        for lid in LESSONS:
            panel = driver.find_element(By.CSS_SELECTOR, 'section[data-lesson="%s"]' % lid)
            driver.execute_script('arguments[0].scrollIntoView({block: "start"});', panel)
            b = driver.execute_script(JS_PANEL, lid)
            if not b or not b['range']:
                t.check(False, '%s: has a slider' % lid, b)
                continue
            rng = panel.find_element(By.CSS_SELECTOR, 'input[type="range"]')
            old = int(b['range']['value'])
            key = Keys.LEFT if old > int(b['range']['min']) else Keys.RIGHT
            rng.send_keys(key)
            if driver.execute_script('return arguments[0].value;', rng) == str(old):
                # a driver that does not move sliders by key: set it as a drag would
                driver.execute_script(
                    'arguments[0].value = String(arguments[1]);'
                    'arguments[0].dispatchEvent(new Event("input", {bubbles: true}));'
                    'arguments[0].dispatchEvent(new Event("change", {bubbles: true}));',
                    rng, old - 1 if key == Keys.LEFT else old + 1)

            def moved():
                a = driver.execute_script(JS_PANEL, lid)
                return a if a and a['state'] in ('ready', 'error') and a['sets'] != b['sets'] else None
            a = wait(moved)
            latencies[lid] = (a['update'] if a else None, a['elapsed'] if a else None)
            label = controls[lid][0]['label']
            if not t.check(a is not None and a['state'] == 'ready',
                           '%s: moving "%s" recomputes the panel (%s)' % (
                               lid, label, 'server %s ms' % ms(a['elapsed'] if a else None)),
                           a and a.get('error') or driver.execute_script(JS_PANEL, lid)):
                continue
            changed = [k for k in a['values'] if b['values'].get(k) != a['values'][k]]
            t.check(changed, '%s: its numbers change (%d of %d)' % (lid, len(changed), len(a['values'])),
                    'before %s\nafter %s' % (b['values'], a['values']))
            sets = json.loads(a['sets'])
            cmd = [servesim, 'lesson', lid, '--json']
            for s in sets:
                cmd += ['--set', s]
            if a['quick'] == 'true':
                cmd.append('--quick')
            try:
                cli = run_cli(cmd)
                nums = cli.get('numbers', {})
                bad = compare_values(a['values'], nums)
                missing = sorted(set(nums) - set(a['values']))
                if missing:
                    bad.append('not shown: ' + ', '.join(missing))
                if a['rows'] != len(cli.get('table', [])):
                    bad.append('table: %d rows shown, the CLI has %d' % (a['rows'], len(cli.get('table', []))))
                if [norm_space(x) for x in a['findings']] != [norm_space(x) for x in cli.get('findings', [])]:
                    bad.append('sentences differ:\npage %s\nCLI  %s' % (a['findings'], cli.get('findings')))
            except Exception as e:
                bad = [str(e)]
            t.check(not bad, '%s: every number, table row and sentence is what `servesim lesson %s --json%s` prints' % (
                lid, lid, ' --quick' if a['quick'] == 'true' else '') + ' for its %d --set' % len(sets),
                '\n'.join(['command: ' + ' '.join(cmd)] + bad))
            t.check(a['series'] > 0, '%s: its figure is drawn (%d polyline.series)' % (lid, a['series']))
            shot = os.path.join(artifacts, 'explore-%s.png' % lid)
            try:
                driver.execute_script('arguments[0].scrollIntoView({block: "start"});', panel)
                t.check(shoot(panel, shot) > 1000, '%s: screenshot %s' % (lid, shot))
            except Exception as e:
                t.check(False, '%s: screenshot %s' % (lid, shot), e)
        drain('panels')
        for lid, (page_ms, server_ms) in latencies.items():
            t.diag('%s: the panel updated %s ms after the slider moved (the 150 ms debounce included); '
                   'the server computed for %s ms' % (lid, ms(page_ms), ms(server_ms)))

        # save figure: the panel's links give the figure as a file
        b = driver.execute_script(JS_PANEL, 'batching')
        bad = []
        for fmt, ctype, magic in (('svg', 'image/svg+xml', b'<'), ('png', 'image/png', b'\x89PNG')):
            href = [h for h in b['figure'] if 'format=' + fmt in h]
            if not href:
                bad.append('no %s link' % fmt)
                continue
            try:
                with urllib.request.urlopen(href[0], timeout=WAIT_S) as r:
                    body = r.read()
                    if not r.headers.get('Content-Type', '').startswith(ctype):
                        bad.append('%s: Content-Type %s' % (fmt, r.headers.get('Content-Type')))
                    if 'attachment' not in (r.headers.get('Content-Disposition') or ''):
                        bad.append('%s: Content-Disposition %s' % (fmt, r.headers.get('Content-Disposition')))
                    if not body.lstrip().startswith(magic):
                        bad.append('%s: the file starts %r' % (fmt, body[:16]))
            except Exception as e:
                bad.append('%s: %s' % (href[0], e))
        t.check(not bad, 'batching: "save figure" gives its SVG and PNG as files', '\n'.join(bad))

        # quick moves: the panel ends on the last value, asked at most once a move
        lid = 'batching'
        c = controls[lid][0]
        rng = driver.find_element(By.CSS_SELECTOR, 'section[data-lesson="%s"] input[type="range"]' % lid)
        driver.execute_script('arguments[0].scrollIntoView({block: "center"});', rng)
        n0 = driver.execute_script(
            'return performance.getEntriesByType("resource").filter(function (e) {'
            ' return e.name.indexOf("/api/lesson?name=' + lid + '&") >= 0; }).length;')
        start = int(rng.get_attribute('value'))
        moves = min(4, start)
        rng.send_keys(Keys.LEFT * moves)
        want = str(start - moves)
        a = wait(lambda: (lambda x: x if x['state'] == 'ready' else None)(driver.execute_script(JS_PANEL, lid)))
        n1 = driver.execute_script(
            'return performance.getEntriesByType("resource").filter(function (e) {'
            ' return e.name.indexOf("/api/lesson?name=' + lid + '&") >= 0; }).length;')
        seed = [x for x in json.loads(a['sets']) if x.startswith('seed=')] if a else []
        try:
            fresh = get_json(url + 'api/lesson?' + urllib.parse.urlencode(
                [('name', lid), (c['name'], repr(c['values'][int(want)]))] +
                [(x['name'], repr(x['default'])) for x in controls[lid][1:]] +
                [('seed', seed[0].split('=', 1)[1] if seed else '1')]))
        except Exception as e:
            fresh = {'sets': str(e)}
        t.check(a is not None and a['range']['value'] == want and json.loads(a['sets']) == fresh['sets']
                and n1 - n0 <= moves,
                '%s: %d quick moves end on the last value, in %d request(s)' % (lid, moves, n1 - n0),
                'slider %s (wanted %s), sets %s, the API for it %s' % (
                    a and a['range']['value'], want, a and a['sets'], fresh.get('sets')))

        # the address bar holds every knob
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
        bad = []
        for lid in LESSONS:
            for c in controls[lid]:
                k = '%s.%s' % (lid, c['name'])
                if k not in q:
                    bad.append('no ' + k)
            if '%s.seed' % lid not in q:
                bad.append('no %s.seed' % lid)
        for lid in LESSONS:
            c = controls[lid][0]
            v = q.get('%s.%s' % (lid, c['name']), [None])[0]
            idx = driver.execute_script(
                'return document.querySelector(\'section[data-lesson="\' + arguments[0] + \'"] input[type="range"]\').value;', lid)
            if v is None or int(idx) >= len(c['values']) or float(v) != float(c['values'][int(idx)]):
                bad.append('%s.%s=%s but the slider is at %s' % (lid, c['name'], v, idx))
        t.check(not bad, 'the address bar holds every knob of every panel', '\n'.join(bad) + '\n' + driver.current_url)

        # the seed re-roll
        lid = 'tail'
        b = driver.execute_script(JS_PANEL, lid)
        click(driver.find_element(By.CSS_SELECTOR, 'section[data-lesson="%s"] [data-action="reroll"]' % lid))
        a = wait(lambda: (lambda x: x if x['state'] == 'ready' and x['sets'] != b['sets'] else None)(
            driver.execute_script(JS_PANEL, lid)))
        seed_b = [s for s in json.loads(b['sets']) if s.startswith('seed=')]
        seed_a = [s for s in json.loads(a['sets']) if s.startswith('seed=')] if a else []
        t.check(a is not None and seed_a and seed_a != seed_b, '%s: re-roll runs a new seed (%s -> %s)' % (
            lid, seed_b, seed_a), a)

        # 5. the permalink (and projector mode from it)
        lid = 'batching'
        c = controls[lid][0]
        want = len(c['values']) // 2
        if want == c['values'].index(c['default']) if c['default'] in c['values'] else False:
            want = max(0, want - 1)
        value = c['values'][want]
        driver.get(url + '?projector=1&%s.%s=%s' % (lid, c['name'], value))
        ok = wait(all_ready)
        b = driver.execute_script(JS_PANEL, lid)
        out = driver.execute_script(
            'var i = document.querySelector(\'section[data-lesson="\' + arguments[0] + \'"] input[type="range"]\');'
            'var o = document.querySelector(\'output[for="\' + i.id + \'"]\');'
            'return [i.value, o ? o.textContent : (i.getAttribute("aria-valuetext") || "")];', lid)
        t.check(ok and int(out[0]) == want and str(c['labels'][want] if c.get('labels') else value) in out[1],
                'permalink ?%s.%s=%s: the slider shows %s' % (lid, c['name'], value, out[1]),
                'slider %s, shown %r, wanted index %d' % (out[0], out[1], want))
        proj = driver.execute_script('return document.body.classList.contains("projector");')
        t.check(proj, 'permalink ?projector=1 turns projector mode on')
        driver.execute_script('window.scrollTo(0, 0);')
        driver.save_screenshot(os.path.join(artifacts, 'explore-projector.png'))
        click(driver.find_element(By.CSS_SELECTOR, '[data-action="projector"]'))
        off = driver.execute_script('return [document.body.classList.contains("projector"), location.search];')
        t.check(not off[0] and 'projector=1' not in off[1], 'the projector button turns it off, and the address bar says so')
        drain('permalink')

        # 6. the what-if page
        driver.get(url + 'whatif.html')
        w = wait(lambda: (lambda x: x if x and x['state'] == 'ready' and x['ttft'] else None)(
            driver.execute_script(JS_WHATIF)))
        t.check(w is not None, 'the what-if page loads the run and its thresholds',
                driver.execute_script(JS_WHATIF))
        run = runs[0]['id']
        if w is not None:
            sel = Select(driver.find_element(By.CSS_SELECTOR, 'select#run'))
            if sel.first_selected_option.get_attribute('value') != str(run):
                sel.select_by_value(str(run))
                w = wait(lambda: (lambda x: x if x and x['state'] == 'ready' and x['ttft'] else None)(
                    driver.execute_script(JS_WHATIF)))
            rng = driver.find_element(By.CSS_SELECTOR, 'input[type="range"][data-slo="ttft"]')
            old = int(w['ttft']['value'])
            key = Keys.LEFT if old > int(w['ttft']['min']) else Keys.RIGHT
            rng.send_keys(key)
            if driver.execute_script('return arguments[0].value;', rng) == str(old):
                driver.execute_script(
                    'arguments[0].value = String(arguments[1]);'
                    'arguments[0].dispatchEvent(new Event("input", {bubbles: true}));',
                    rng, old - 1 if key == Keys.LEFT else old + 1)
            a = wait(lambda: (lambda x: x if x and x['state'] in ('ready', 'error') and x['args'] != w['args']
                              else None)(driver.execute_script(JS_WHATIF)))
            args = json.loads(a['args']) if a else []
            t.check(a is not None and a['state'] == 'ready' and any(s.startswith('ttft=') for s in args),
                    'what-if: moving the TTFT threshold recomputes (%s, shown %s ms after the move)' % (
                        ' '.join(args), ms(a['update'] if a else None)), a)
            if a is not None:
                cmd = [servesim, 'report', db, '--run', str(run), '--json', '--by', 'class']
                for s in args:
                    cmd += ['--slo', s]
                try:
                    rep = run_cli(cmd)
                    expected = {'attainment': rep['slo']['attainment'],
                                'goodput_requests_per_s': rep['slo']['goodput_requests_per_s']}
                    for cname, cl in (rep.get('classes') or {}).items():
                        expected[cname + '.attainment'] = cl['slo']['attainment']
                        expected[cname + '.goodput_requests_per_s'] = cl['slo']['goodput_requests_per_s']
                    bad = compare_values(a['values'], expected)
                    missing = sorted(set(expected) - set(a['values']))
                    if missing:
                        bad.append('not shown: ' + ', '.join(missing))
                except Exception as e:
                    bad = [str(e)]
                t.check(not bad, 'what-if: attainment and goodput, overall and per class (%d values), are '
                        '`servesim report --slo` for its thresholds' % len(a['values']),
                        '\n'.join(['command: ' + ' '.join(cmd)] + bad))
                t.check(a['series'] > 0, 'what-if: the SLO curve is drawn')
            shot = os.path.join(artifacts, 'explore-whatif.png')
            try:
                driver.execute_script('window.scrollTo(0, 0);')
                t.check(shoot(driver.find_element(By.CSS_SELECTOR, '#whatif'), shot) > 1000,
                        'what-if: screenshot %s' % shot)
            except Exception as e:
                t.check(False, 'what-if: screenshot %s' % shot, e)
        drain('whatif')

        # 6b. percentile targets on the what-if page, from the address bar and typed
        run = runs[0]['id']
        driver.get(url + 'whatif.html?run=%d&ttft_p99=2' % run)
        v = wait(lambda: driver.execute_script(JS_VERDICTS))
        try:
            rep = run_cli([servesim, 'report', db, '--run', str(run), '--json', '--by', 'class',
                           '--slo', 'ttft_p99=2'])
            want = rep['slo']['targets'][0]
        except Exception as e:
            want = {'error': str(e)}
        got = v[0] if v else None
        t.check(got is not None and got['key'] == 'ttft_p99' and got['met'] == ('true' if want.get('met') else 'false')
                and same_number(got['margin'], want.get('margin_s')),
                'what-if ?ttft_p99=2: the verdict is `servesim report --slo ttft_p99=2`\'s (%s, margin %s)' % (
                    got['text'] if got else None, want.get('margin_s')), {'page': v, 'cli': want})
        box = driver.find_element(By.CSS_SELECTOR, 'input#targets')
        t.check(box.get_attribute('value') == 'ttft_p99=2', 'the targets box shows the address bar\'s target')
        box.clear()
        box.send_keys('ttft_p99=2 e2e_p90=1000s' + Keys.ENTER)
        v2 = wait(lambda: (lambda x: x if x and len(x) == 2 else None)(driver.execute_script(JS_VERDICTS)))
        args = json.loads(driver.execute_script(JS_WHATIF)['args'] or '[]')
        t.check(v2 is not None and v2[1]['key'] == 'e2e_p90' and v2[1]['met'] == 'true'
                and 'e2e_p90=1000s' in args and 'e2e_p90=1000s' in driver.execute_script('return location.search;'),
                'a typed target, e2e_p90=1000s, is answered too (met) and kept in the address bar', {'page': v2, 'args': args})
        try:
            driver.execute_script('window.scrollTo(0, 0);')
            shoot(driver.find_element(By.CSS_SELECTOR, '#whatif'), os.path.join(artifacts, 'explore-whatif-targets.png'))
        except Exception as e:
            t.diag('what-if targets: no screenshot: %s' % e)
        box.clear()
        box.send_keys('ttft_q99=2' + Keys.ENTER)
        err = wait(lambda: driver.execute_script(JS_WHATIF)['error'])
        t.check(err is not None and 'ttft_q99' in err, 'a malformed target is refused in words: %s' % err)
        drain('whatif targets')

        # 7. the console
        severe = [(w_, e) for w_, e in console if e.get('level') == 'SEVERE']
        t.check(not severe, 'no errors in the browser console (%d messages in all)' % len(console),
                '\n'.join('%s: %s' % (w_, e.get('message')) for w_, e in severe))
        for w_, e in console:
            if e.get('level') != 'SEVERE':
                t.diag('console %s %s: %s' % (w_, e.get('level'), e.get('message', '')[:200]))
    except Exception:
        t.check(False, 'the test runs to its end', traceback.format_exc())
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass
        if server is not None:
            rc = server.stop()
            t.check(rc == 130, 'SIGINT stops servesim explore with exit status 130 (got %s)' % rc,
                    ''.join(server.err[-20:]))
            left = sorted(os.listdir(tmp))
            t.check(left == before, 'it leaves nothing behind in its folder', 'before %s, after %s' % (before, left))
        shutil.rmtree(tmp, ignore_errors=True)
        t.diag('%.1f s in all' % (time.monotonic() - started))
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
