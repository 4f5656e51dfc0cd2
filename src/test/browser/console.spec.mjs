// Drives the Hedgerow console in real headless Chromium (Debian's /usr/bin/chromium) against a running app.
// Usage: node console.spec.mjs <baseUrl> <betaSimRootUrl> <screenshotDir> [proberToken]
// Prints "ok: ..." per check and "console: all checks passed" at the end; exits 1 on the first failure.
import { join } from 'node:path';
import { check, launch, ok, run } from './browser.mjs';

const [base, betaSim, shots, proberToken] = process.argv.slice(2);
if (!base || !betaSim || !shots) {
  console.error('usage: node console.spec.mjs <baseUrl> <betaSimRootUrl> <screenshotDir> [proberToken]');
  process.exit(2);
}

async function chat(alias, extra = {}, key = 'k-acme') {
  const resp = await fetch(base + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: alias, messages: [{ role: 'user', content: 'browser ' + Math.random() }], ...extra }),
  });
  const body = await resp.json();
  return { status: resp.status, provider: body.provider, error: body.error };
}

async function adminPut(path, body) {
  const resp = await fetch(base + path, {
    method: 'PUT', headers: { authorization: 'Bearer a-acme', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!resp.ok) throw new Error(path + ' answered ' + resp.status);
}

/** Waits until the panel editor shows this strategy and these weights (as the dashboard's poll brings them). */
async function editorShows(p, strategy, weights, timeout = 8000) {
  await p.waitForFunction(([s, w]) => {
    const f = document.querySelector('form[data-alias="panel"]');
    return f && f.querySelector('select').value === s && Object.entries(w).every(([r, v]) =>
      f.querySelector(`input[data-route="${r}"][data-field="weight"]`).value === String(v));
  }, [strategy, weights], { timeout });
}

/** Waits until the dashboard's poll has read the groups once more. */
async function nextPoll(p) {
  const seen = Number(await p.locator('#groups').getAttribute('data-polls') || 0);
  await p.waitForFunction(n => Number(document.getElementById('groups').dataset.polls || 0) > n, seen,
    { timeout: 8000 });
}

async function adminGet(path) {
  return (await fetch(base + path, { headers: { authorization: 'Bearer a-acme' } })).json();
}

/** Stops the page's clock a moment from now: from then on its timers fire only as the test runs the clock on. */
async function pauseClock(p) {
  await p.clock.pauseAt(await p.evaluate(() => Date.now()) + 500);
}

/** Waits until `cond()` (async) holds, asking every 100 ms for up to `timeout` ms; false if it never did. */
async function until(cond, timeout = 8000) {
  for (const end = Date.now() + timeout; Date.now() < end; await new Promise(r => setTimeout(r, 100))) {
    if (await cond()) return true;
  }
  return cond();
}

/**
 * A usage answer as the panel should show it: the totals row, one row per alias, one per client key (with each alias
 * it billed and its requests there) and one per day and alias.
 */
function usageRows(u) {
  const figures = x => [x.requests, x.prompt_tokens, x.completion_tokens, x.total_tokens, x.cost];
  const aliasesOf = key => u.aliases.flatMap(a => a.keys.filter(k => k.key === key).map(k => [a.alias, k.requests]));
  return { total: figures(u.total), aliases: u.aliases.map(a => [a.alias, ...figures(a)]),
    keys: u.keys.map(k => [k.key, ...figures(k), aliasesOf(k.key)]),
    days: u.days.map(d => [d.date, d.alias, ...figures(d)]) };
}

/** What the usage panel shows, read back from its cells (numbers as numbers: "1,234" is 1234). */
async function usageShown(p) {
  return p.evaluate(() => {
    const num = t => Number(t.replace(/[^0-9.-]/g, ''));
    const cells = tr => [...tr.children].map(c => c.textContent);
    const rows = sel => [...document.querySelectorAll(sel)].map(cells);
    const foot = document.querySelector('#usage-aliases tfoot tr');
    // "metered (3), kimi3 (1)": each alias the key billed, with its requests there
    const aliasList = t => t ? t.split(', ').map(x => x.match(/^(.*) \((.*)\)$/)).map(m => [m[1], num(m[2])]) : [];
    return { total: foot ? cells(foot).slice(1).map(num) : null,
      aliases: rows('#usage-aliases tbody tr[data-alias]').map(([a, ...f]) => [a, ...f.map(num)]),
      keys: rows('#usage-keys tbody tr[data-key]').map(([k, ...f]) => [k, ...f.slice(0, 5).map(num), aliasList(f[5])]),
      days: rows('#usage-days tbody tr[data-date]').map(([d, a, ...f]) => [d, a, ...f.map(num)]) };
  });
}

/** Waits until the usage panel shows exactly what the API answers to `query`; returns that answer. */
async function usageMatches(p, query, timeout = 8000) {
  let api = null;
  let shown = null;
  await until(async () => {
    api = await adminGet('/admin/usage' + (query ? '?' + query : ''));
    shown = await usageShown(p);
    return JSON.stringify(shown) === JSON.stringify(usageRows(api));
  }, timeout);
  check(JSON.stringify(shown) === JSON.stringify(usageRows(api)), 'the usage panel shows what /admin/usage'
    + (query ? '?' + query : '') + ' answers: totals ' + JSON.stringify(shown.total) + ', aliases '
    + shown.aliases.map(a => a[0]).join(',') + ', keys ' + shown.keys.map(k => k[0]).join(',') + ', '
    + shown.days.length + ' day row(s)');
  return api;
}

/** The settings of the catalog file's panel group that the test edits: as filed, or the default (null). */
const PANEL_SETTINGS_AS_FILED = { hedging: null, head_hold: null, breaker: { max_fails: 1, fail_timeout: '4s' },
  slow_bar: null, failover_criteria: null };

/** Waits until the panel editor's field of a setting shows this value (as the dashboard's poll brings it). */
async function settingShows(p, name, value, timeout = 8000) {
  await p.waitForFunction(([n, v]) => {
    const f = document.querySelector(`form[data-alias="panel"] [data-setting="${n}"]`);
    return f && f.value === v;
  }, [name, value], { timeout });
}

const browser = await launch(shots);
const { context, page } = browser;
// the page's timers and Date are the test's to stop and run on (they follow real time until paused)
await page.clock.install();
// anything the dashboard's content security policy blocks (an inline style or handler, another origin) fails the test
const blocked = [];
context.on('console', m => { if (m.text().includes('Content Security Policy')) blocked.push(m.text()); });
await context.addInitScript(() => document.addEventListener('securitypolicyviolation',
  e => console.error('Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI)));
await run(browser, 'console', 'failure.png', async () => {
  // start from the catalog file's panel group
  await adminPut('/admin/groups/panel', { ...PANEL_SETTINGS_AS_FILED, strategy: 'rr_health',
    members: [{ route: 'panel-alpha', weight: 100 }, { route: 'panel-beta', weight: 100 }] });

  const loaded = await page.goto(base + '/console/');
  check(await page.locator('h1').textContent() === 'Hedgerow console', 'the dashboard loads at /console/');
  check((loaded.headers()['content-security-policy'] || '').includes("frame-ancestors 'none'"),
    'the dashboard runs under its content security policy');

  // a client key is refused; the admin key signs in (keyboard only: type, Enter)
  await page.getByLabel('Admin key').fill('k-acme');
  await page.getByLabel('Admin key').press('Enter');
  await page.getByText('That is a client key').waitFor({ timeout: 5000 });
  ok('a client key is refused with a clear message');
  await page.getByLabel('Admin key').fill('a-acme');
  await page.getByLabel('Admin key').press('Enter');
  await page.locator('form[data-alias="panel"]').waitFor({ timeout: 10000 });
  check((await page.locator('#whoami').textContent()).includes('acme'), 'signed in as org acme');
  check(await page.locator('form[data-alias="secret"]').count() === 0, "another org's group is not shown");
  await page.locator('form[data-alias="panel"] [data-cell="state"][data-route="panel-beta"]')
    .filter({ hasText: 'healthy' }).waitFor({ timeout: 6000 });
  ok('live health shows panel-beta healthy');
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select')]
    .filter(e => !e.labels || e.labels.length === 0).map(e => e.id || e.name));
  check(unlabelled.length === 0, 'every input and select has a label (' + unlabelled.join(',') + ')');
  const repeated = await page.evaluate(() => {
    const seen = new Set();
    return [...document.querySelectorAll('[id]')].map(e => e.id).filter(id => seen.has(id) || !seen.add(id));
  });
  check(repeated.length === 0, 'no element id is used twice (' + repeated.join(',') + ')');
  // names that cleaned to one id (r.1 and r_1, gpt-4.1 and gpt-4_1) showed one member's hint beside the other's field
  const ids = await page.evaluate(() => ['r.1', 'r_1', 'gpt-4.1', 'gpt-4_1', 'a-b', 'a_2d_b'].map(idPart));
  check(new Set(ids).size === ids.length, 'every name has an id part of its own: ' + ids.join(' '));
  await page.screenshot({ path: join(shots, '01-signed-in.png'), fullPage: true });

  // change a weight (and the strategy) in the editor; routing follows
  const panel = page.locator('form[data-alias="panel"]');
  await panel.getByLabel('Strategy', { exact: true }).selectOption('weighted');
  await page.getByLabel('Weight of panel-beta').fill('0');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  check(await page.getByLabel('Weight of panel-beta').inputValue() === '0', 'the saved weight is shown after reload');
  // the "Saved" line confirms an action, it is not a state: it goes as soon as the user edits again, or NOTICE_MS after
  const statusText = () => page.locator('#status').textContent();
  await pauseClock(page);
  check((await statusText()).startsWith('Saved panel'), 'the Saved line is up after the save');
  await page.getByLabel('Weight of panel-alpha').fill('7');
  check(await statusText() === '', 'editing again takes the Saved line down');
  await panel.getByRole('button', { name: 'Discard changes to panel' }).click();
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  const noticeMs = await page.evaluate(() => NOTICE_MS);
  await page.clock.runFor(noticeMs - 1);
  check((await statusText()).startsWith('Saved panel'), 'the Saved line stays up while it is read');
  await page.clock.runFor(1);
  check(await statusText() === '', 'the Saved line goes ' + noticeMs + ' ms after the save');
  await page.clock.resume();
  const served = [];
  for (let i = 0; i < 4; i++) served.push((await chat('panel')).provider);
  check(served.every(p => p === 'alpha'), 'routing follows the weight: ' + served.join(','));
  await page.screenshot({ path: join(shots, '02-weight-saved.png'), fullPage: true });

  // an edit made elsewhere (the admin API) shows up in an editor nobody is typing in
  await adminPut('/admin/groups/panel', { strategy: 'least_latency', members: [{ route: 'panel-alpha', weight: 40 }] });
  await editorShows(page, 'least_latency', { 'panel-alpha': 40, 'panel-beta': 0 });
  ok('an edit made through the admin API shows up in the editor without a reload');

  // ... and in another tab, while this one has unsaved values: they are kept, the change is flagged, a save refused
  await page.getByLabel('Weight of panel-beta').fill('5');
  const tab = await context.newPage();
  await tab.goto(base + '/console/');
  await tab.getByLabel('Admin key').fill('a-acme');
  await tab.getByLabel('Admin key').press('Enter');
  const tabPanel = tab.locator('form[data-alias="panel"]');
  await tabPanel.waitFor({ timeout: 10000 });
  await tabPanel.getByLabel('Strategy', { exact: true }).selectOption('priority');
  await tab.getByLabel('Weight of panel-alpha').fill('30');
  await tabPanel.getByRole('button', { name: 'Save panel' }).click();
  await tab.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  await tab.close();
  await panel.locator('.group-note').filter({ hasText: 'changed elsewhere' }).waitFor({ timeout: 8000 });
  check(await page.getByLabel('Weight of panel-beta').inputValue() === '5',
    'what this tab typed is kept when another tab saves: ' + await panel.locator('.group-note').textContent());
  await page.screenshot({ path: join(shots, '02b-changed-elsewhere.png'), fullPage: true });
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status.error').filter({ hasText: 'changed elsewhere' }).waitFor({ timeout: 5000 });
  const kept = await adminGet('/admin/groups/panel');
  check(kept.strategy === 'priority' && kept.members.map(m => m.weight).join(',') === '30,0',
    'a save based on stale values is refused and the other tab\'s edit stays: ' + await page.locator('#status').textContent());
  await editorShows(page, 'priority', { 'panel-alpha': 30, 'panel-beta': 0 }, 1000);
  ok('after the refusal the editor shows the values in effect');

  await adminPut('/admin/groups/panel', { strategy: 'weighted',
    members: [{ route: 'panel-alpha', weight: 100 }, { route: 'panel-beta', weight: 0 }] });
  await editorShows(page, 'weighted', { 'panel-alpha': 100, 'panel-beta': 0 });

  // a poll's answer read before this tab's own save, arriving after it, does not put the old values back (the
  // server's real answer is only delivered late, as a slow network would)
  let held = null;
  const release = new Promise(r => { held = { release: r }; });
  const captured = new Promise(r => { held.captured = r; });
  await page.route('**/admin/groups', async route => {
    const response = await route.fetch();
    held.captured();
    await release;
    await route.fulfill({ response });
  }, { times: 1 });
  await captured;
  await page.getByLabel('Weight of panel-alpha').fill('90');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  const polled = Number(await page.locator('#groups').getAttribute('data-polls'));
  held.release();
  await page.waitForFunction(n => Number(document.getElementById('groups').dataset.polls) > n, polled,
    { timeout: 5000 });
  check(await page.getByLabel('Weight of panel-alpha').inputValue() === '90',
    'a poll answered before the save and delivered after it leaves the saved value in the editor');
  await adminPut('/admin/groups/panel', { members: [{ route: 'panel-alpha', weight: 100 }] });
  await editorShows(page, 'weighted', { 'panel-alpha': 100, 'panel-beta': 0 });

  // an invalid edit is refused and said so
  await page.getByLabel('Weight of panel-alpha').fill('0');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Not saved' }).filter({ hasText: 'has weight 0' })
    .waitFor({ timeout: 5000 });
  ok('an edit that zeroes every weight is refused: ' + await page.locator('#status').textContent());
  // ... and the form does not pass the refused values off as in effect: they are marked, what is in effect beside them
  const alphaWeight = page.getByLabel('Weight of panel-alpha');
  check(await alphaWeight.inputValue() === '0' && (await alphaWeight.getAttribute('class') || '').includes('unsaved'),
    'the refused weight is kept for correction, marked unsaved');
  const alphaEffect = panel.locator('#m-panel-panel_2d_alpha-weight-effect');
  check(await alphaEffect.isVisible() && await alphaEffect.textContent() === 'in effect: 100',
    'the weight in effect is shown beside it: ' + await alphaEffect.textContent());
  check((await panel.locator('.group-note').textContent()).includes('not in effect'),
    'the group says its marked values are not in effect: ' + await panel.locator('.group-note').textContent());
  check(await panel.locator('.unsaved').count() === 1 && await panel.locator('.in-effect:visible').count() === 1,
    'only the refused field is marked');
  // the refusal names the member by its id (not by its index in the org's route list) and marks its field invalid
  const refusal = await page.locator('#status').textContent();
  check(refusal.includes('Not saved: panel-alpha weight: ') && !refusal.includes('routes[')
    && await alphaWeight.getAttribute('aria-invalid') === 'true' && await panel.locator('[aria-invalid]').count() === 1,
    'the refused field is named by its route and marked invalid: ' + refusal);
  await page.screenshot({ path: join(shots, '02c-refused-edit.png'), fullPage: true });
  // the poll leaves the marked value alone; discarding shows the values in effect
  // the note is an alert: more typing and a poll leave its unchanged words alone (not announced again)
  await panel.locator('.group-note').evaluate(n => { window.noteText = n.firstChild; });
  await alphaWeight.press('End');
  await alphaWeight.pressSequentially('0');
  await nextPoll(page);
  check(await alphaWeight.inputValue() === '00', 'the poll keeps the unsaved value');
  check(await panel.locator('.group-note').evaluate(n => n.firstChild === window.noteText),
    'typing and polling do not rewrite the unchanged alert');
  await panel.getByRole('button', { name: 'Discard changes to panel' }).click();
  await editorShows(page, 'weighted', { 'panel-alpha': 100, 'panel-beta': 0 }, 1000);
  check(await panel.locator('.unsaved').count() === 0 && await panel.locator('.in-effect:visible').count() === 0
    && await panel.locator('.group-note').textContent() === '' && await panel.locator('[aria-invalid]').count() === 0,
    'discarding shows the values in effect, nothing marked');

  // an emptied field is not sent as 0: the browser asks for a value and nothing is saved
  const puts = [];
  page.on('request', r => { if (r.method() === 'PUT') puts.push(r.url()); });
  await page.getByLabel('Priority of panel-beta').fill('');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await nextPoll(page);
  const stillOne = (await adminGet('/admin/groups/panel')).members.find(m => m.route === 'panel-beta').priority;
  check(puts.length === 0 && stillOne === 1
    && await page.getByLabel('Priority of panel-beta').evaluate(e => e.validity.valueMissing),
    'an emptied priority is refused by the form, not saved as 0');
  await panel.getByRole('button', { name: 'Discard changes to panel' }).click();

  // the group's other settings, as hedgerow.yaml names and writes them, folded away under its members
  const settingsOf = panel.locator('details.settings');
  await settingsOf.locator('summary').click();
  const setting = name => panel.getByLabel(name, { exact: true });
  const shownNow = await adminGet('/admin/groups/panel');
  check(await setting('breaker.fail_timeout').inputValue() === shownNow.settings.breaker.fail_timeout
    && await setting('hedging').inputValue() === 'true' && await setting('head_hold').inputValue() === '30s'
    && await setting('failover_criteria').inputValue() === shownNow.settings.failover_criteria.join(', ')
    && await setting('embeddings_route').inputValue() === '',
    'the settings show what the API does: breaker.fail_timeout ' + await setting('breaker.fail_timeout').inputValue()
      + ', failover_criteria ' + await setting('failover_criteria').inputValue());
  // change three, one of them nested, and save: only they change, the weights and the rest keep their values
  await setting('hedging').selectOption('false');
  await setting('head_hold').fill('10s');
  await setting('breaker.max_fails').fill('2');
  await setting('failover_criteria').fill('error, timeout, http_429');
  check(await panel.locator('.unsaved').count() === 4, 'the changed settings are marked unsaved');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  const savedSettings = await adminGet('/admin/groups/panel');
  check(savedSettings.settings.hedging === false && savedSettings.settings.head_hold === '10s'
    && savedSettings.settings.breaker.max_fails === 2 && savedSettings.settings.breaker.fail_timeout === '4s'
    && savedSettings.settings.failover_criteria.join(',') === 'error,timeout,http_429'
    && savedSettings.members.map(m => m.weight).join(',') === '100,0' && savedSettings.strategy === 'weighted',
    'the saved settings are in effect, the others kept: ' + JSON.stringify(savedSettings.settings.breaker));
  check(await panel.locator('.unsaved').count() === 0 && await setting('head_hold').inputValue() === '10s',
    'after the save nothing is marked and the editor shows the saved values');
  // a value the catalog file would refuse is refused with the file's words, its field named and marked
  await setting('breaker.fail_timeout').fill('soon');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Not saved' }).filter({ hasText: 'breaker.fail_timeout: bad timeout' })
    .waitFor({ timeout: 5000 });
  const failTimeout = setting('breaker.fail_timeout');
  const failEffect = panel.locator('#s-panel-breaker_2e_fail_5f_timeout-effect');
  check(await failTimeout.getAttribute('aria-invalid') === 'true'
    && (await failTimeout.getAttribute('class') || '').includes('unsaved')
    && await failEffect.textContent() === 'in effect: 4s' && await panel.locator('[aria-invalid]').count() === 1
    && (await adminGet('/admin/groups/panel')).settings.breaker.fail_timeout === '4s',
    'the refused setting is marked invalid, the value in effect beside it, nothing saved: '
      + await page.locator('#status').textContent());
  await page.screenshot({ path: join(shots, '02d-refused-setting.png'), fullPage: true });
  await panel.getByRole('button', { name: 'Discard changes to panel' }).click();
  check(await failTimeout.inputValue() === '4s' && await panel.locator('[aria-invalid]').count() === 0,
    'discarding shows the setting in effect again');
  // an edit of a setting made through the API shows up in the editor
  await adminPut('/admin/groups/panel', { slow_bar: 3 });
  await settingShows(page, 'slow_bar', '3');
  ok('a setting edited through the admin API shows up in the editor without a reload');
  // and an emptied field gives a setting back its default
  await setting('head_hold').fill('');
  await panel.getByRole('button', { name: 'Save panel' }).click();
  await page.locator('#status').filter({ hasText: 'Saved panel' }).waitFor({ timeout: 5000 });
  check((await adminGet('/admin/groups/panel')).settings.head_hold === '30s'
    && await setting('head_hold').inputValue() === '30s', 'an emptied setting is saved as its default (30s)');
  await page.screenshot({ path: join(shots, '02e-settings.png'), fullPage: true });
  await adminPut('/admin/groups/panel', PANEL_SETTINGS_AS_FILED);
  await settingShows(page, 'hedging', 'true');
  await settingsOf.locator('summary').click();

  // a member goes into cooldown and comes back. The page's clock stops between two polls, so the read that shows the
  // cooldown is the one the test runs the clock on to; every health read after it is held until the test lets go
  let cooling = false;
  let healthAnswers = 0;
  const heldHealth = [];
  await page.route('**/admin/health', async route => {
    if (cooling) {
      heldHealth.push(route);
      return;
    }
    const response = await route.fetch();
    const body = await response.json();
    cooling = body.groups.some(g => g.members.some(m => m.route === 'panel-beta' && m.state === 'cooling_down'));
    healthAnswers++;
    await route.fulfill({ response });
  });
  await page.waitForResponse(r => r.url().endsWith('/admin/health'));
  await pauseClock(page);
  await fetch(betaSim + '/sim/models/kimi-b/faults', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'http_error', status: 500, type: 'server_error', message: 'browser test' }) });
  const failed = await chat('panel', { provider: { only: ['beta'] } });
  check(failed.status >= 500, 'a request pinned to beta fails upstream (' + failed.status + ')');
  const betaState = page.locator('form[data-alias="panel"] [data-cell="state"][data-route="panel-beta"]');
  await page.clock.runFor(await page.evaluate(() => POLL_MS));
  await betaState.filter({ hasText: 'cooling down' }).waitFor({ timeout: 5000 });
  ok('panel-beta shows cooling down: ' + await betaState.textContent());
  await page.screenshot({ path: join(shots, '03-cooling-down.png'), fullPage: true });
  // its countdown ticks a second each second on the page, from the deadline that read gave, with no read since
  const secondsLeft = async () => Number((await betaState.textContent())
    .match(/^cooling down \(([\d.]+) s left\)$/)?.[1]);
  const answered = healthAnswers;
  const counted = [await secondsLeft()];
  for (let i = 0; i < 2 && counted[i] > 0; i++) {
    await page.clock.runFor(1000);
    counted.push(await secondsLeft());
  }
  check(Number.isInteger(counted[0]) && counted[0] > 0 && counted.every((n, i) => n === counted[0] - i)
    && healthAnswers === answered,
    'the cooldown counts down every second without a new read: ' + counted.join(' → ') + ' s left, '
      + (healthAnswers - answered) + ' reads answered since');
  cooling = false;
  await Promise.all(heldHealth.map(r => r.continue()));
  await page.unroute('**/admin/health');
  await page.clock.resume();
  await betaState.filter({ hasText: 'half-open' }).waitFor({ timeout: 8000 });
  ok('after the cooldown panel-beta is half-open');
  const round = await (await fetch(base + '/prober/run',
    { method: 'POST', headers: proberToken ? { authorization: 'Bearer ' + proberToken } : {} })).json();
  const probe = round.routes.find(r => r.route === 'panel-beta');
  check(probe && probe.action === 'half_open_probe' && probe.outcome === 'ok',
    'the prober took the half-open probe: ' + JSON.stringify(probe));
  await betaState.filter({ hasText: 'healthy' }).waitFor({ timeout: 5000 });
  ok('panel-beta is back: healthy');
  await page.screenshot({ path: join(shots, '04-recovered.png'), fullPage: true });

  // live health that cannot be read (the network drops the request) is not passed off as live, and when it can be
  // read again the page says nothing more about the failure
  await page.route('**/admin/health', route => route.abort('failed'));
  await page.locator('#status.error').filter({ hasText: 'Health unavailable' }).waitFor({ timeout: 5000 });
  check(await betaState.getAttribute('data-stale') === 'true' && (await betaState.textContent()).includes('as of'),
    'the last health read is marked as not live: ' + await betaState.textContent());
  // ... and so are the SLO table and the charts, which come from the same read
  const sloTable = page.locator('#slo-table');
  const figures = page.locator('#charts figure');
  const staleFigures = () => figures.evaluateAll(fs => fs.filter(f => f.dataset.stale === 'true'
    && f.classList.contains('stale') && f.querySelector('figcaption').textContent.includes('(as of ')).length);
  check(await sloTable.getAttribute('data-stale') === 'true' && await sloTable.getAttribute('class') === 'stale'
    && (await sloTable.locator('caption').textContent()).includes('(as of '),
    'the SLO table is marked as not live: ' + await sloTable.locator('caption').textContent());
  const figureCount = await figures.count();
  check(figureCount > 0 && await staleFigures() === figureCount,
    'each of the ' + figureCount + ' charts is marked as not live: '
      + await figures.first().locator('figcaption').textContent());
  await page.screenshot({ path: join(shots, '04b-health-unavailable.png'), fullPage: true });
  await page.unroute('**/admin/health');
  await page.waitForFunction(() => {
    const cell = document.querySelector('form[data-alias="panel"] [data-cell="state"][data-route="panel-beta"]');
    return cell.dataset.stale === undefined && cell.textContent === 'healthy';
  }, null, { timeout: 8000 });
  check(!(await page.locator('#status').textContent()).includes('Health unavailable'),
    'health is live again and the failure message is gone');
  check(await sloTable.getAttribute('data-stale') === null && !(await sloTable.getAttribute('class'))
    && !(await sloTable.locator('caption').textContent()).includes('as of') && await staleFigures() === 0
    && await page.locator('.as-of').count() === 0, 'the SLO table and the charts are live again, unmarked');

  // SLO table and the TTFT chart with measured points
  await page.locator('#slo-table tbody tr[data-route="panel-alpha"]').waitFor({ timeout: 5000 });
  const points = await page.locator('figure[data-route="panel-alpha"] circle[data-point]').count();
  check(points >= 1, 'the TTFT chart of panel-alpha plots ' + points + ' measured point(s)');
  const slo = await page.locator('#slo-table tbody tr[data-route="panel-alpha"] td').first().textContent();
  check(['meets', 'below'].includes(slo), 'the SLO table judges panel-alpha: ' + slo);

  // a request fails over: panel-beta (asked for first) answers 500 once, panel-alpha serves it
  await adminPut('/admin/groups/panel', { strategy: 'rr_health',
    members: [{ route: 'panel-alpha', weight: 100 }, { route: 'panel-beta', weight: 100 }] });
  await fetch(betaSim + '/sim/models/kimi-b/faults', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'http_error', status: 500, type: 'server_error', message: 'browser failover' }) });
  const failover = await chat('panel', { provider: { order: ['beta', 'alpha'] } });
  check(failover.status === 200 && failover.provider === 'alpha',
    'a request asking for beta first fails over to alpha (' + failover.status + ', ' + failover.provider + ')');

  // the audit log, filtered: each attempt of the trail with its cause
  const audit = page.locator('#audit-form');
  await audit.getByLabel('Type', { exact: true }).selectOption('request');
  await audit.getByLabel('Alias', { exact: true }).fill('panel');
  await audit.getByRole('button', { name: 'Filter' }).click();
  const trail = page.locator('#audit-table tbody tr td:nth-child(5)');
  await trail.filter({ hasText: 'panel-beta:failed(http_500) → panel-alpha:success' }).first()
    .waitFor({ timeout: 5000 });
  ok('the audit log shows the failover trail with its cause: panel-beta:failed(http_500) → panel-alpha:success');
  const pinnedFailure = await trail.filter({ hasText: /^panel-beta:failed\(http_500\)$/ }).count();
  check(pinnedFailure >= 1, 'the audit log shows the request pinned to beta failing with http_500');
  await page.screenshot({ path: join(shots, '05-slo-chart-audit.png'), fullPage: true });

  // an operator puts a cooled-down route back into service: with a minute's cooldown only the Reset button on the
  // member (shown while it is out for its health, not on a healthy one) brings it back, and the next request asking
  // for it first is served by it; the reset is in the audit log
  await fetch(base + '/admin/routes/reset', { method: 'POST',
    headers: { authorization: 'Bearer a-acme', 'content-type': 'application/json' },
    body: JSON.stringify({ route: 'panel-beta' }) }); // the failover above cooled it for 4 s: start from healthy
  await betaState.filter({ hasText: /^healthy$/ }).waitFor({ timeout: 8000 });
  await adminPut('/admin/groups/panel', { breaker: { max_fails: 1, fail_timeout: '60s' } });
  await fetch(betaSim + '/sim/models/kimi-b/faults', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'http_error', status: 500, type: 'server_error', message: 'browser reset' }) });
  const cooled = await chat('panel', { provider: { only: ['beta'] } });
  check(cooled.status >= 500, 'a request pinned to beta fails upstream and cools it for a minute (' + cooled.status
    + ')');
  const betaReset = page.getByRole('button', { name: 'Reset the health of panel-beta' });
  // (more than the 4 s panel's cooldown was: this is the minute's)
  await betaState.filter({ hasText: /^cooling down \((\d{2}) s left\)$/ }).waitFor({ timeout: 5000 });
  await betaReset.waitFor({ state: 'visible', timeout: 5000 });
  check(await page.getByRole('button', { name: 'Reset the health of panel-alpha' }).isHidden(),
    'panel-beta ' + await betaState.textContent() + ' has a Reset button, healthy panel-alpha none');
  await page.screenshot({ path: join(shots, '05b-reset-offered.png'), fullPage: true });
  await betaReset.click();
  await page.locator('#status').filter({ hasText: 'Reset the health of panel-beta: it was cooling down, it is healthy'
    + ' now.' }).waitFor({ timeout: 5000 });
  ok('the Reset button confirms: ' + await page.locator('#status').textContent());
  await betaState.filter({ hasText: /^healthy$/ }).waitFor({ timeout: 5000 });
  check(await betaReset.isHidden(), 'panel-beta shows healthy at once, and its Reset button is gone');
  const back = await chat('panel', { provider: { order: ['beta', 'alpha'] } });
  check(back.status === 200 && back.provider === 'beta',
    'the next request asking for beta first is served by beta (' + back.status + ', ' + back.provider + ')');
  await audit.getByLabel('Type', { exact: true }).selectOption('admin');
  await audit.getByRole('button', { name: 'Filter' }).click();
  const resetRow = page.locator('#audit-table tbody tr')
    .filter({ hasText: "Health of panel-beta reset by admin key 'ops': it was cooling_down" }).first();
  await resetRow.waitFor({ timeout: 5000 });
  check(await resetRow.locator('td:nth-child(4)').textContent() === 'reset_health',
    'the audit log shows the reset: ' + await resetRow.locator('td:nth-child(5)').textContent());
  await adminPut('/admin/groups/panel', PANEL_SETTINGS_AS_FILED);

  // an operator's verification verdict is shown as the operator's, over the prober's, with a Clear button that hands
  // the route back to the prober's verdict at once; the prober's own verdict has no such button
  const alphaHealth = async () => (await adminGet('/admin/health?alias=panel')).groups[0].members
    .find(m => m.route === 'panel-alpha');
  const probed = await alphaHealth();
  check(probed.verification && probed.verification_by === 'prober',
    'panel-alpha carries the prober\'s verdict: ' + probed.verification + ' by ' + probed.verification_by);
  const alphaVerdict = page.locator('#slo-table td[data-cell="verification"][data-route="panel-alpha"]');
  const alphaState = page.locator('form[data-alias="panel"] [data-cell="state"][data-route="panel-alpha"]');
  await alphaVerdict.filter({ hasText: probed.verification + ' (by the prober)' }).waitFor({ timeout: 5000 });
  const clearAlpha = page.getByRole('button', { name: 'Clear the operator\'s verification of panel-alpha' });
  check(await clearAlpha.count() === 0, 'the prober\'s verdict is shown as the prober\'s, with nothing to clear: '
    + await alphaVerdict.textContent());
  await adminPut('/admin/routes/verification', { route: 'panel-alpha', verification: 'fail:browser operator' });
  await alphaVerdict.filter({ hasText: 'fail:browser operator (set by an operator)' }).waitFor({ timeout: 8000 });
  await alphaState.filter({ hasText: 'failing verification' }).waitFor({ timeout: 5000 });
  await clearAlpha.waitFor({ state: 'visible', timeout: 5000 });
  check(await page.getByRole('button', { name: 'Clear the operator\'s verification of panel-beta' }).count() === 0,
    'an operator\'s verdict is shown as the operator\'s, with a Clear button: ' + await alphaVerdict.textContent()
      + ', panel-alpha ' + await alphaState.textContent());
  await page.screenshot({ path: join(shots, '05c-operator-verdict.png'), fullPage: true });
  await clearAlpha.click();
  await page.locator('#status').filter({ hasText: 'Cleared the operator\'s verification of panel-alpha (it was '
    + 'fail:browser operator): the prober\'s verdicts apply again.' }).waitFor({ timeout: 5000 });
  await alphaVerdict.filter({ hasText: probed.verification + ' (by the prober)' }).waitFor({ timeout: 5000 });
  await alphaState.filter({ hasText: /^healthy$/ }).waitFor({ timeout: 5000 });
  const cleared = await alphaHealth();
  check(await clearAlpha.count() === 0 && cleared.verification === probed.verification
    && cleared.verification_by === 'prober', 'the Clear button put the prober\'s verdict back at once: '
      + await alphaVerdict.textContent() + ', panel-alpha ' + await alphaState.textContent());
  await audit.getByRole('button', { name: 'Filter' }).click();
  await page.locator('#audit-table tbody tr').filter({ hasText: 'The operator\'s verification of panel-alpha cleared by '
    + 'admin key \'ops\' (it was \'fail:browser operator\')' }).first().waitFor({ timeout: 5000 });
  ok('the audit log shows the operator\'s verdict cleared');

  // an embeddings member has no speed targets but a verdict, drawn with its Clear button as a chat member's (hunt28)
  const vectorsVerdict = page.locator('#slo-table td[data-cell="verification"][data-route="vectors-alpha"]');
  await adminPut('/admin/routes/verification', { route: 'vectors-alpha', verification: 'fail:browser vectors' });
  await vectorsVerdict.filter({ hasText: 'fail:browser vectors (set by an operator)' }).waitFor({ timeout: 8000 });
  await page.getByRole('button', { name: 'Clear the operator\'s verification of vectors-alpha' }).click();
  await page.locator('#status').filter({ hasText: 'Cleared the operator\'s verification of vectors-alpha' })
    .waitFor({ timeout: 5000 });
  await vectorsVerdict.filter({ hasNotText: 'fail:browser vectors' }).waitFor({ timeout: 5000 });
  ok('an embeddings member\'s verdict is shown and cleared in the SLO table');

  // explain: the prefilled body for the first chat alias, a body that keeps panel-beta out, then bad JSON
  const groups = await (await fetch(base + '/admin/groups', { headers: { authorization: 'Bearer a-acme' } })).json();
  const firstChat = groups.groups.find(g => g.members.some(m => !m.embeddings));
  const bodyField = page.getByLabel('Request body (JSON)');
  const sample = JSON.parse(await bodyField.inputValue());
  check(sample.model === firstChat.alias, 'the explain body is prefilled for the first chat alias: ' + sample.model);
  const explainButton = page.getByRole('button', { name: 'Explain', exact: true });
  const explained = page.locator('#explain-table tbody tr');
  await explainButton.click();
  await page.locator('#status').filter({ hasText: 'Explained a request to ' + firstChat.alias })
    .waitFor({ timeout: 5000 });
  const listed = await explained.evaluateAll(rows => rows.map(r => r.dataset.route));
  const members = firstChat.members.map(m => m.route);
  check(listed.length === members.length && members.every(r => listed.includes(r)),
    'explain lists every route of ' + firstChat.alias + ': ' + listed.join(', '));

  await bodyField.fill(JSON.stringify({ model: 'panel', provider: { only: ['alpha'] },
    messages: [{ role: 'user', content: 'where would this go?' }] }, null, 2));
  await explainButton.click();
  await page.locator('#status').filter({ hasText: 'Explained a request to panel' }).waitFor({ timeout: 5000 });
  check((await explained.evaluateAll(rows => rows.map(r => r.dataset.route))).join(',') === 'panel-alpha,panel-beta',
    'explain lists the routes of panel, the candidate first');
  const alphaRow = page.locator('#explain-table tbody tr[data-route="panel-alpha"]');
  const betaRow = page.locator('#explain-table tbody tr[data-route="panel-beta"]');
  check(await alphaRow.getAttribute('data-rank') === '1' && await alphaRow.locator('.check-failed').count() === 0,
    'panel-alpha passes every filter and ranks 1: ' + (await alphaRow.locator('td').first().textContent()));
  const betaPrefs = betaRow.locator('li[data-filter="preferences"]');
  check(await betaRow.getAttribute('data-rank') === '0' && await betaPrefs.getAttribute('data-passed') === 'false'
    && (await betaRow.textContent()).includes('not a candidate'),
    'panel-beta fails the preferences filter and is not a candidate: ' + await betaPrefs.textContent());
  await page.screenshot({ path: join(shots, '06-explain.png'), fullPage: true });

  await bodyField.fill('{"model": "panel", "messages": [');
  await explainButton.click();
  await page.locator('#status.error').filter({ hasText: 'Explain failed' }).waitFor({ timeout: 5000 });
  check(await explained.count() === 0,
    'invalid JSON is refused and said so: ' + await page.locator('#status').textContent());

  // usage: a few requests to metered (priced 0.5 per million prompt tokens and 1.5 per million completion tokens; only
  // this test sends to it), three with the client key app and one with batch, then the panel, which re-reads this month
  // so far on the poll, shows exactly what the API bills: totals, per alias, per client key, per day
  const metered = async (key = '') => (await adminGet('/admin/usage?alias=metered' + (key ? '&key=' + key : '')))
    .total.requests;
  const meteredBefore = await metered();
  const batchBefore = await metered('batch');
  for (let i = 0; i < 3; i++) {
    const r = await chat('metered');
    check(r.status === 200, 'a request to metered is served (' + (i + 1) + ' of 3)');
  }
  check((await chat('metered', {}, 'k-acme-batch')).status === 200,
    'a request to metered with the batch key is served');
  check(await until(async () => await metered() === meteredBefore + 4), 'the four requests are in the ledger');
  const all = await usageMatches(page, '');
  check(all.aliases.length >= 2 && all.aliases.some(a => a.alias === 'metered') && all.total.cost > 0,
    'the unfiltered usage has several aliases, metered among them: ' + all.aliases.map(a => a.alias).join(', '));
  check(['app', 'batch'].every(k => all.keys.some(x => x.key === k))
    && await page.locator('#usage-keys tbody tr[data-key="batch"]').count() === 1,
    'the per-key table has a row per client key that billed: ' + all.keys.map(k => k.key).join(', '));
  const usagePanel = page.locator('section[aria-labelledby="usage-title"]');
  const summary = page.locator('#usage-summary');
  check((await summary.textContent()).startsWith(all.from + ' to ' + all.to + ' (UTC), all aliases: ')
    && all.from === all.to.slice(0, 8) + '01', 'the default range is this month so far: '
    + await summary.textContent());
  // the alias filter narrows it (the org's aliases are suggested)
  const usageForm = page.locator('#usage-form');
  check((await page.locator('#aliases option').evaluateAll(os => os.map(o => o.value))).includes('metered'),
    'the alias filter suggests the org\'s aliases');
  await usageForm.getByLabel('Alias', { exact: true }).fill('metered');
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  const one = await usageMatches(page, 'alias=metered');
  check(one.aliases.map(a => a.alias).join(',') === 'metered' && one.total.requests === meteredBefore + 4
    && one.total.cost > 0 && one.total.requests < all.total.requests && one.days.every(d => d.alias === 'metered')
    && (await summary.textContent()).includes('alias metered'),
    'the alias filter narrows the panel to metered: ' + await summary.textContent());
  // the key filter narrows it to one client key's requests (the org's key names are suggested)
  check(JSON.stringify(await page.locator('#keys option').evaluateAll(os => os.map(o => o.value)))
    === JSON.stringify(['app', 'batch']), 'the key filter suggests the org\'s client key names');
  await usageForm.getByLabel('Key', { exact: true }).fill('batch');
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  const batch = await usageMatches(page, 'alias=metered&key=batch');
  check(batch.total.requests === batchBefore + 1 && batch.keys.map(k => k.key).join(',') === 'batch'
    && (await summary.textContent()).includes('alias metered, key batch'),
    'the key filter narrows the panel to the batch key\'s requests: ' + await summary.textContent());
  // a key the org has no such name for: the API's message with the key field marked, no figures
  await usageForm.getByLabel('Key', { exact: true }).fill('nobody');
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  await page.locator('#usage-error').filter({ hasText: '"nobody"' }).waitFor({ timeout: 5000 });
  check(await page.locator('#usage-keys tbody tr, #usage-aliases tbody tr').count() === 0
    && await usageForm.getByLabel('Key', { exact: true }).getAttribute('aria-invalid') === 'true',
    'an unknown key shows the API\'s message, the key field marked: '
      + await page.locator('#usage-error').textContent());
  await usageForm.getByLabel('Key', { exact: true }).fill('');
  // a range that ends before it starts: the API's message, its field marked, no table of figures
  const dayAfter = new Date(Date.parse(all.to) + 86400000).toISOString().slice(0, 10);
  await usageForm.getByLabel('From', { exact: true }).fill(dayAfter);
  await usageForm.getByLabel('To', { exact: true }).fill(all.to);
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  const refusedMessage = (await (await fetch(base + '/admin/usage?from=' + dayAfter + '&to=' + all.to,
    { headers: { authorization: 'Bearer a-acme' } })).json()).error.message;
  await page.locator('#usage-error').filter({ hasText: refusedMessage }).waitFor({ timeout: 5000 });
  check(await page.locator('#usage-aliases tbody tr, #usage-aliases tfoot tr, #usage-days tbody tr').count() === 0
    && await summary.textContent() === '' && await page.locator('#usage-chart svg').count() === 0
    && await usageForm.getByLabel('From', { exact: true }).getAttribute('aria-invalid') === 'true',
    'a from-after-to range shows the API\'s message and no figures: '
      + await page.locator('#usage-error').textContent());
  // how many times the page asks for usage over the next two polls
  const readsOverTwoPolls = async () => {
    let reads = 0;
    const counted = r => { if (new URL(r.url()).pathname === '/admin/usage') reads++; };
    page.on('request', counted);
    await nextPoll(page);
    await nextPoll(page);
    page.off('request', counted);
    return reads;
  };
  const usageReads = await readsOverTwoPolls();
  check(usageReads === 0 && await page.locator('#usage-error').textContent() === refusedMessage
    && await page.locator('#usage-aliases tbody tr').count() === 0,
    'the poll does not ask for the refused range again (' + usageReads + ' reads), its message stays');
  await usagePanel.screenshot({ path: join(shots, '06c-usage-refused.png') });
  // yesterday, every alias: accepted, the message and the mark gone; a past day no longer changes, so it is read once
  const dayBefore = new Date(Date.parse(all.to) - 86400000).toISOString().slice(0, 10);
  await usageForm.getByLabel('From', { exact: true }).fill(dayBefore);
  await usageForm.getByLabel('To', { exact: true }).fill(dayBefore);
  await usageForm.getByLabel('Alias', { exact: true }).fill('');
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  await usageMatches(page, 'from=' + dayBefore + '&to=' + dayBefore);
  check(await page.locator('#usage-error').textContent() === '' && await page.locator('#usage-form [aria-invalid]')
    .count() === 0, 'a valid range takes the message and the mark away');
  const pastReads = await readsOverTwoPolls();
  check(pastReads === 0, 'the poll does not read a past range again (' + pastReads + ' reads)');
  // the week to today: the poll reads it again, as today still changes; the chart has a bar per day billed, in its slot
  const weekAgo = new Date(Date.parse(all.to) - 6 * 86400000).toISOString().slice(0, 10);
  await usageForm.getByLabel('From', { exact: true }).fill(weekAgo);
  await usageForm.getByLabel('To', { exact: true }).fill(all.to);
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  const week = await usageMatches(page, 'from=' + weekAgo + '&to=' + all.to);
  // each bar sits in its day's slot along the x axis (the range's seven days, from its left end to its right)
  const bars = await page.locator('#usage-chart svg').evaluate(svg => {
    const axis = svg.querySelector('line');
    const [x1, x2] = [Number(axis.getAttribute('x1')), Number(axis.getAttribute('x2'))];
    return [...svg.querySelectorAll('rect[data-date]')].map(r => ({ date: r.dataset.date,
      slot: (Number(r.getAttribute('x')) + Number(r.getAttribute('width')) / 2 - x1) / (x2 - x1) * 7 }));
  });
  check(bars.map(b => b.date).join(',') === [...new Set(week.days.map(d => d.date))].join(',')
    && bars.some(b => b.date === all.to)
    && bars.every(b => Math.floor(b.slot) === (Date.parse(b.date) - Date.parse(weekAgo)) / 86400000),
    'the chart has one bar per day billed, each at its day: ' + bars.map(b => b.date + ' in slot '
      + Math.floor(b.slot)).join(', '));
  await usagePanel.screenshot({ path: join(shots, '06b-usage.png') });
  const todayReads = await readsOverTwoPolls();
  check(todayReads >= 1, 'the poll reads a range that reaches today again (' + todayReads + ' reads in two polls)');
  // usage that cannot be read is not passed off as live, and is live again once it can be
  const usageUrl = url => url.pathname === '/admin/usage';
  await page.route(usageUrl, route => route.abort('failed'));
  const usageView = page.locator('#usage-view');
  await page.locator('#usage-view[data-stale="true"]').waitFor({ timeout: 5000 });
  check((await usageView.getAttribute('class')) === 'stale' && (await summary.textContent()).includes('(as of ')
    && (await page.locator('#usage-error').textContent()).startsWith('Usage unavailable')
    && await page.locator('#usage-days tbody tr[data-date]').count() > 0,
    'usage that cannot be read keeps its figures, marked as not live: ' + await summary.textContent() + ' / '
      + await page.locator('#usage-error').textContent());
  await usagePanel.screenshot({ path: join(shots, '06d-usage-unavailable.png') });
  await page.unroute(usageUrl);
  await page.waitForFunction(() => document.getElementById('usage-view').dataset.stale === undefined,
    null, { timeout: 8000 });
  check(!(await usageView.getAttribute('class')) && !(await summary.textContent()).includes('as of')
    && await page.locator('#usage-error').textContent() === '', 'usage is live again, unmarked');
  // a range left without dates ends today, whichever day that is: past midnight UTC the poll still reads it (the
  // last answer's `to` is now yesterday)
  for (const name of ['From', 'To', 'Alias', 'Key']) await usageForm.getByLabel(name, { exact: true }).fill('');
  await usageForm.getByRole('button', { name: 'Show usage' }).click();
  const open = await usageMatches(page, '');
  await page.clock.setSystemTime(Date.parse(open.to) + 86400000 + 3600000);
  const afterMidnight = await readsOverTwoPolls();
  await page.clock.setSystemTime(Date.now());
  check(afterMidnight >= 1, 'the poll reads a range without dates again after midnight UTC (' + afterMidnight
    + ' reads in two polls)');

  // judged accuracy: the judged group (lowest_usage by llm_accuracy; its judge route grader scores judged-good's
  // answers 87 and judged-bad's 12; only this test sends to it) shows each member's judge scores in words once the
  // health poll reads them, "not judged yet" before the first; a group without a judge shows none
  const judgedForm = page.locator('form[data-alias="judged"]');
  const accuracyOf = route => judgedForm.locator(`[data-cell="accuracy"][data-route="${route}"]`);
  const judgedMember = async route => (await adminGet('/admin/health?alias=judged')).groups[0].members
    .find(m => m.route === route);
  check((await judgedMember('judged-good')).accuracy === null && (await judgedMember('judged-bad')).accuracy === null,
    'the judged group has no scores yet');
  await accuracyOf('judged-good').filter({ hasText: 'not judged yet' }).waitFor({ timeout: 8000 });
  check(await accuracyOf('judged-bad').textContent() === 'accuracy: not judged yet'
    && await judgedForm.locator('thead th').nth(7).textContent() === 'Usage (tokens), judged accuracy',
    'a judged group\'s member without a score says it is not judged yet');
  const otherAccuracy = await page.locator('form[data-alias="panel"] [data-cell="accuracy"], '
    + 'form[data-alias="grader"] [data-cell="accuracy"]').allTextContents();
  check(otherAccuracy.length === 3 && otherAccuracy.every(t => t === '')
    && await panel.locator('thead th').nth(7).textContent() === 'Usage (tokens)',
    'a group without a judge shows no accuracy: ' + JSON.stringify(otherAccuracy));
  // unscored members come first, in rotation: four requests give each answers to judge
  for (let i = 0; i < 4; i++) {
    const r = await chat('judged');
    check(r.status === 200, 'a request to judged is served' + (r.error ? ': ' + r.status + ' ' + r.error.message : ''));
  }
  const scored = async route => (await judgedMember(route)).accuracy?.samples >= 1;
  check(await until(async () => await scored('judged-good') && await scored('judged-bad'), 15000),
    'the judge scored both members');
  const wording = a => 'accuracy ' + Math.round(a.score) + '/100 (' + a.samples + (a.samples === 1 ? ' score)'
    : ' scores)');
  for (const [route, score] of [['judged-good', 87], ['judged-bad', 12]]) {
    let want = null;
    const shown = await until(async () => {
      const a = (await judgedMember(route)).accuracy;
      want = wording(a);
      return a.score === score && await accuracyOf(route).textContent() === want;
    });
    check(shown, route + '\'s cell shows its judged accuracy as the API gives it: "'
      + await accuracyOf(route).textContent() + '" (the API: ' + want + ')');
  }
  await judgedForm.screenshot({ path: join(shots, '06e-judged-accuracy.png') });

  // a route of another alias is added to a group from the dashboard: deck (alpha's deck-alpha alone, a pinned route)
  // takes spare's only route, spare-beta; spare goes away, and deck's requests are then served by both providers
  const deck = page.locator('form[data-alias="deck"]');
  const addToDeck = deck.getByLabel('Add a route to deck');
  const spareOption = addToDeck.locator('option[value="spare-beta"]');
  check(await addToDeck.count() === 1 && await addToDeck.locator('option[value="spare-beta"]').count() === 1
    && await addToDeck.locator('option[value="deck-alpha"]').count() === 0
    && await addToDeck.locator('option[value="vectors-alpha"]').count() === 0,
    'the add-a-route list offers spare-beta, and neither the group\'s own members nor an embeddings route');
  const spareText = await spareOption.textContent();
  check(spareText.includes('in spare') && spareText.includes('spare will be removed'),
    'the list says where the route is and that its alias goes with it: "' + spareText + '"');
  const deckAlone = [];
  for (let i = 0; i < 2; i++) deckAlone.push((await chat('deck')).provider);
  check(deckAlone.every(p => p === 'alpha'), 'deck is served by alpha alone before: ' + deckAlone.join(','));
  await addToDeck.selectOption('spare-beta');
  await deck.getByRole('button', { name: 'Add the chosen route to deck' }).click();
  await page.locator('#status').filter({ hasText: 'Added spare-beta to deck' }).waitFor({ timeout: 5000 });
  const added = await page.locator('#status').textContent();
  check(added.includes('deck-alpha, spare-beta') && added.includes('spare had no other route and was removed'),
    'the status line says what the group is now and that spare was removed: ' + added);
  await deck.locator('tr[data-route="spare-beta"]').waitFor({ timeout: 5000 });
  check(await page.locator('form[data-alias="spare"]').count() === 0, 'the spare group is gone from the page');
  check((await adminGet('/admin/groups/deck')).members.map(m => m.route).join(',') === 'deck-alpha,spare-beta',
    'the API shows spare-beta in deck');
  const deckServed = new Set();
  for (let i = 0; i < 4; i++) deckServed.add((await chat('deck')).provider);
  check(deckServed.has('alpha') && deckServed.has('beta'), 'deck now serves with both: ' + [...deckServed].join(','));
  const moveEvent = (await adminGet('/admin/audit?type=admin&alias=deck&limit=1')).events[0];
  check(moveEvent.action === 'move' && moveEvent.route === 'spare-beta' && moveEvent.previous_state === 'spare',
    'the move is in the audit log: ' + moveEvent.message);
  await deck.screenshot({ path: join(shots, '06f-route-added.png') });
  await adminPut('/admin/routes/alias', { route: 'spare-beta', alias: 'spare', new_alias: true });
  await page.locator('form[data-alias="spare"]').waitFor({ timeout: 8000 });
  await deck.locator('tr[data-route="spare-beta"]').waitFor({ state: 'detached', timeout: 8000 });
  ok('a move made through the API shows on the next poll: spare is back, deck alone again');

  // the admin key stops being accepted (rotated or removed: here the tab holds one the server does not know): the
  // next poll's 401 signs the dashboard out, says why, and leaves none of the org's data on the page
  await page.getByLabel('Weight of panel-beta').fill('42');
  await page.evaluate(() => sessionStorage.setItem('hedgerow-admin-key', 'a-revoked'));
  await page.locator('#signin-error').filter({ hasText: 'no longer accepted' }).waitFor({ timeout: 8000 });
  const said = await page.locator('#signin-error').textContent();
  check(await page.locator('#app').isHidden() && await page.getByLabel('Admin key').isVisible(),
    'a 401 on a poll returns to the sign-in form: ' + said);
  check(said.includes('panel'), 'it names the group whose unsaved changes were not saved');
  check(await page.locator('form[data-alias]').count() === 0 && await page.locator('#slo-table tbody tr').count() === 0
    && await page.locator('#explain-table tbody tr').count() === 0 && await page.locator('#whoami').textContent() === ''
    && await page.locator('#usage-aliases tbody tr, #usage-aliases tfoot tr, #usage-keys tbody tr,'
      + ' #usage-days tbody tr, #aliases option, #keys option').count() === 0
    && await page.locator('#usage-summary').textContent() === ''
    && await page.locator('#usage-from').inputValue() === ''
    && await page.locator('#status').textContent() === '',
    'no data of the org is left on the page (status: "' + await page.locator('#status').textContent() + '")');
  await page.screenshot({ path: join(shots, '07-key-refused.png'), fullPage: true });
  // signing in again in the same tab, with another org's admin key: only that org is shown (its own duo, one member)
  await page.getByLabel('Admin key').fill('a-other');
  await page.getByLabel('Admin key').press('Enter');
  await page.locator('form[data-alias="secret"]').waitFor({ timeout: 10000 });
  await page.locator('#slo-table tbody tr[data-route="secret-gamma"]').waitFor({ timeout: 5000 });
  await page.locator('#usage-summary').filter({ hasText: 'all aliases' }).waitFor({ timeout: 5000 });
  const otherGroups = await page.locator('form[data-alias]').evaluateAll(fs => fs.map(f => f.dataset.alias));
  const otherRows = await page.locator('form[data-alias] tbody tr, #slo-table tbody tr')
    .evaluateAll(rs => rs.map(r => r.dataset.route));
  check(await page.locator('#signin-error').textContent() === ''
    && (await page.locator('#whoami').textContent()).includes('other')
    && otherGroups.join(',') === 'secret,duo' && otherRows.every(r => ['secret-gamma', 'duo-alpha'].includes(r))
    && (await page.locator('#usage-aliases tbody tr[data-alias]').evaluateAll(rs => rs.map(r => r.dataset.alias)))
      .every(a => ['secret', 'duo'].includes(a)),
    'signing in again as org other shows only its groups and routes: ' + otherGroups.join(',') + ' / '
      + [...new Set(otherRows)].join(','));
  // the key is valid but not an admin key (here the tab holds org other's client key, as after losing admin rights):
  // the next poll's 403 signs the dashboard out too, saying so in the API's words, not leaving the page half-working
  await page.evaluate(() => sessionStorage.setItem('hedgerow-admin-key', 'k-other'));
  await page.locator('#signin-error').filter({ hasText: 'not an admin key' }).waitFor({ timeout: 8000 });
  const forbidden = await page.locator('#signin-error').textContent();
  check(forbidden.includes('(403)') && forbidden.includes('This is a client key; the admin API needs an admin key')
    && await page.locator('#app').isHidden() && await page.getByLabel('Admin key').isVisible(),
    'a 403 on a poll returns to the sign-in form with the API\'s message: ' + forbidden);
  check(await page.locator('form[data-alias]').count() === 0 && await page.locator('#slo-table tbody tr').count() === 0
    && await page.locator('#whoami').textContent() === '' && await page.locator('#status').textContent() === '',
    'no data of the org is left on the page after the 403 (status: "' + await page.locator('#status').textContent()
      + '")');
  await page.screenshot({ path: join(shots, '08-not-admin-key.png'), fullPage: true });

  await adminPut('/admin/groups/panel', { strategy: 'rr_health',
    members: [{ route: 'panel-alpha', weight: 100 }, { route: 'panel-beta', weight: 100 }] });
  check(blocked.length === 0, 'nothing the dashboard did was blocked by its policy' + (blocked.length ? ': '
    + blocked.join(' | ') : ''));
});
