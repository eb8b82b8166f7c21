import { ensureChromium } from '../../scripts/browser.mjs';

/** globalSetup of the browser project: Chromium is there before any test file starts. */
export default function setup(): void {
  ensureChromium();
}
