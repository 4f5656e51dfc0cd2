// Drives the Hedgerow console in real headless Chromium while the app's shared state store (Redis) is down, or after
// it is back: the usage panel and the audit log say when their answer is only what this instance recorded.
// Usage: node outage.spec.mjs <baseUrl> <screenshotDir> <partial|whole>
// Prints "ok: ..." per check and "outage: all checks passed" at the end; exits 1 on the first failure.
import { join } from 'node:path';
import { check, launch, ok, run } from './browser.mjs';

const [base, shots, expect] = process.argv.slice(2);
if (!base || !shots || !['partial', 'whole'].includes(expect)) {
  console.error('usage: node outage.spec.mjs <baseUrl> <screenshotDir> <partial|whole>');
  process.exit(2);
}
async function adminGet(path) {
  return (await fetch(base + path, { headers: { authorization: 'Bearer a-acme' } })).json();
}

const browser = await launch(shots);
const { page } = browser;
await run(browser, 'outage', 'outage-failure.png', async () => {
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
});
