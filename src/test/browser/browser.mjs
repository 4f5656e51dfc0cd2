// What every console spec shares: Debian's headless Chromium in a throwaway profile, "ok:" lines, checks, and a run
// that screenshots a failure, closes the browser, removes the profile and exits 0 or 1.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ok = msg => console.log('ok: ' + msg);

export function check(cond, msg) {
  if (!cond) throw new Error(msg);
  ok(msg);
}

/** Launches Chromium; screenshots go to {@code shots}. */
export async function launch(shots) {
  mkdirSync(shots, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'hedgerow-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 1600 },
  });
  const page = context.pages()[0] || await context.newPage();
  return { context, page, profile, shots };
}

/**
 * Runs {@code body} (an async function), prints "{@code name}: all checks passed" when it ends or "FAIL: ..." with
 * a screenshot named {@code failureShot} when it throws, then closes the browser and exits 0 or 1.
 */
export async function run(browser, name, failureShot, body) {
  let exit = 0;
  try {
    await body();
    console.log(name + ': all checks passed');
  } catch (e) {
    exit = 1;
    console.log('FAIL: ' + e.message);
    await browser.page.screenshot({ path: join(browser.shots, failureShot), fullPage: true }).catch(() => {});
  } finally {
    await browser.context.close();
    rmSync(browser.profile, { recursive: true, force: true });
  }
  process.exit(exit);
}
