// Applies the fix of Portkey-AI/gateway PR #1551 (issue #1550) to the installed 1.15.x build: on node, a mapped
// streaming response has immutable headers, so Portkey's own x-portkey-* header update throws and every streamed
// request fails with "Something went wrong". The fix copies the response into a new Response before the update.
// Idempotent; exits non-zero when the code it patches is not found (another Portkey version).
import { readFileSync, writeFileSync } from "node:fs";
const file = process.argv[2];
const src = readFileSync(file, "utf8");
const marker = "/*hedgerow-bench:pr1551*/";
if (src.includes(marker)) process.exit(0);
const needle = "this.updateHeaders(i,n.cacheStatus,o)";
if (src.split(needle).length !== 2) { console.error("portkey-patch: code to patch not found in " + file); process.exit(1); }
const fix = marker + "(r&&this.context.isStreaming&&(i=new Response(i.body,{status:i.status,statusText:i.statusText,"
  + "headers:new Headers(i.headers)})))," + needle;
writeFileSync(file, src.replace(needle, fix));
console.error("portkey-patch: applied the PR #1551 streaming fix to " + file);
