// Drives the Hedgerow console in real headless Chromium while the app's shared state store (Redis) is down, or after
// it is back: the usage panel and the audit log say when their answer is only what this instance recorded.
// Usage: node outage.spec.mjs <baseUrl> <screenshotDir> <partial|whole>
// Prints "ok: ..." per check and "outage: all checks passed" at the end; exits 1 on the first failure.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, shots, expect] = process.argv.slice(2);
if (!base || !shots || !['partial', 'whole'].includes(expect)) {
  console.error('usage: node outage.spec.mjs <baseUrl> <screenshotDir> <partial|whole>');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'hedgerow-chromium-'));
const ok = msg => console.log('ok: ' + msg);

function check(cond, msg) {
  if (!cond) throw new Error(msg);
  ok(msg);
}

async function adminGet(path) {
  return (await fetch(base + path, { headers: { authorization: 'Bearer a-acme' } })).json();
}

const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 1600 },
});
let exit = 0;
const page = context.pages()[0] || await context.newPage();
try {
  await page.goto(base + '/console/');
  await page.getByLabel('Admin key').fill('a-acme');
  await page.getByLabel('Admin key').press('Enter');
  await page.locator('#usage-view').waitFor({ timeout: 10000 });
  ok('signed in; the usage panel shows its figures');

  const usage = await adminGet('/admin/usage');
  const audit = await adminGet('/admin/audit');
  if (expect === 'partial') {
    check(usage.partial === true && audit.partial === true, 'precondition: the API marks both answers partial');
    const said = 'Partial: ' + usage.partial_reason;
    await page.locator('#usage-partial').filter({ hasText: said }).waitFor({ timeout: 10000 });
    ok('the usage panel says its figures are this instance\'s only, in the API\'s words: ' + said);
    check(await page.locator('#audit-partial').textContent() === 'Partial: ' + audit.partial_reason,
      'the audit log says its events are this instance\'s only');
    check(await page.locator('#usage-partial').isVisible() && await page.locator('#audit-partial').isVisible(),
      'both notes are visible');
    check(await page.locator('#usage-partial').getAttribute('role') === 'status',
      'the note is announced as a status, not an alert');
    await page.screenshot({ path: join(shots, '09-partial.png'), fullPage: true });
  } else {
    check(usage.partial === undefined && audit.partial === undefined, 'precondition: the API answers are whole');
    // one poll more than the sign-in's reads: a note would have been written by now
    const polls = Number(await page.locator('#groups').getAttribute('data-polls') || 0);
    await page.waitForFunction(n => Number(document.getElementById('groups').dataset.polls || 0) > n, polls,
      { timeout: 8000 });
    check(await page.locator('#usage-partial').textContent() === ''
      && !(await page.locator('#usage-partial').isVisible()), 'no partial note on the usage panel');
    check(await page.locator('#audit-partial').textContent() === ''
      && !(await page.locator('#audit-partial').isVisible()), 'no partial note on the audit log');
    await page.screenshot({ path: join(shots, '10-whole.png'), fullPage: true });
  }
  console.log('outage: all checks passed');
} catch (e) {
  exit = 1;
  console.log('FAIL: ' + e.message);
  await page.screenshot({ path: join(shots, 'outage-failure.png'), fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(exit);
