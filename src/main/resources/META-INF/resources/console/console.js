// Hedgerow console: plain DOM on the /admin API. No framework, no build step.
'use strict';

const KEY = 'hedgerow-admin-key';
const STRATEGIES = ['auto', 'rr_health', 'weighted', 'least_latency', 'lowest_latency', 'consistent_hashing',
  'least_connections', 'lowest_usage', 'priority', 'semantic'];
// a group's settings beside its strategy, as hedgerow.yaml names them (nested ones dotted); the choices of those that
// have a fixed set of values, and the hint of those that take a duration
const SETTING_CHOICES = {
  resume_mid_stream: ['true', 'false'], hedging: ['true', 'false'], latency_strategy: ['tpot', 'e2e'],
  tokens_count_strategy: ['prompt_tokens', 'completion_tokens', 'total_tokens', 'cost', 'llm_accuracy'],
  distance_metric: ['cosine', 'euclidean'],
};
const POLL_MS = 2000;
// a confirmation on the status line ("Saved …") goes after this long, or as soon as the user edits a group again
const NOTICE_MS = 5000;
let pollTimer = null;
let noticeTimer = null;
// the next redraw of the countdowns (cooldown, Retry-After hold), which tick on the page between polls
let countdownTimer = null;
let ticking = false;
// true between a successful sign-in and sign-out (or the key's refusal); `session` numbers the sign-ins, so an answer
// to a request made in an earlier one is dropped instead of drawn
let signedIn = false;
let session = 0;
// counts the editors' resets from this tab's own writes: a group list asked for before the latest one is older than
// what the editor shows, and is dropped rather than drawn over it
let writes = 0;
// the server time of the last health read, and whether the reads are failing since
let healthAt = null;
let healthFailing = false;
// alias -> its editor: { form, base, current, cells, rows }. `base` is the server's group the inputs started from
// (its revision goes out as If-Match when saving); `current` is the newest one the server has shown (in effect).
let editors = new Map();
// the query the form last applied (as URL parameters; '' asks for the API's default, this month so far) and what the
// panel shows of it: `to` of the answer drawn (null: none yet), when it was read, whether the reads are failing since,
// and whether the API refused the query (a 400: not asked again until the form changes it). `seq` numbers the reads,
// so that a poll's answer arriving after the form applied a new query is dropped, not drawn over the new one.
const usagePanel = { query: '', openEnded: true, seq: 0, to: null, at: null, failing: false, refused: false };
/** The usage form's fields, named as the API's query parameters. */
const USAGE_FIELDS = ['from', 'to', 'alias', 'key'];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function svgEl(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function api(method, path, body, headers) {
  const asked = session;
  const opts = { method, headers: { authorization: 'Bearer ' + sessionStorage.getItem(KEY), ...headers } };
  if (body !== undefined) {
    opts.headers['content-type'] = 'application/json';
    // a string is sent as typed (explain's request body: the server judges it as the gateway would)
    opts.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  const text = await resp.text();
  if (asked !== session) throw quiet(new Error('signed out'));
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
  const err = json && json.error ? json.error : { message: resp.status + ' ' + text };
  if ((resp.status === 401 || resp.status === 403) && signedIn) {
    keyRefused(resp.status, err.message);
    throw quiet(new Error('key refused'));
  }
  if (!resp.ok) {
    // an error inside a route is named by the route's id and field (routes[i] indexes the org's list, not this page)
    // and an error in a group's settings by the setting (breaker.fail_timeout), as the editor labels it
    const where = x => x.route ? x.route + ' ' + x.path.replace(/^routes\[\d+\]\.?/, '') : x.param || x.path;
    const detail = (err.errors || []).map(x => (where(x) ? where(x) + ': ' : '') + x.message).join('; ');
    const e = new Error(detail || err.message);
    e.status = resp.status;
    e.param = err.param || null;
    e.errors = err.errors || [];
    throw e;
  }
  return json;
}

/** An error already dealt with (the key was refused, or the session it belongs to has ended): not to be shown. */
function quiet(e) {
  e.quiet = true;
  return e;
}

/** Shows a failed request's error on the status line, unless it is quiet. */
function failed(prefix, e) {
  if (!e.quiet) status(prefix + e.message, true);
}

/** Writes `text` into a live region (an alert, a status line) unless it says that already: a rewrite is announced. */
function sayOnce(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function status(msg, isError) {
  clearTimeout(noticeTimer);
  noticeTimer = null;
  const s = document.getElementById('status');
  s.textContent = msg;
  s.className = isError ? 'error' : '';
}

/** A confirmation of what the user just did: on the status line until NOTICE_MS have passed or they edit again. */
function notice(msg) {
  status(msg);
  noticeTimer = setTimeout(clearNotice, NOTICE_MS);
}

/** Takes a confirmation off the status line; anything else there (an error) stays until something replaces it. */
function clearNotice() {
  if (noticeTimer !== null) status('');
}

// ---- sign in ------------------------------------------------------------------------------------------------

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  session++;
  try {
    const me = await api('GET', '/admin/whoami');
    signedIn = true;
    document.getElementById('signin-error').textContent = '';
    document.getElementById('admin-key').value = '';
    document.getElementById('whoami').textContent = 'Organization: ' + me.org;
    // the key filter's suggestions: the org's client key names (the usage ledger bills each request to its key)
    document.getElementById('keys').replaceChildren(...(me.keys || []).map(k => el('option', { value: k })));
    document.getElementById('signin').hidden = true;
    document.getElementById('app').hidden = false;
    document.getElementById('signout').hidden = false;
    prefillExplain(await loadGroups());
    await refresh();
    await loadAudit();
    await loadUsage();
    clearInterval(pollTimer);
    pollTimer = setInterval(tick, POLL_MS);
    document.getElementById('groups-title').focus?.();
  } catch (e) {
    if (e.quiet) return;
    sessionStorage.removeItem(KEY);
    signedIn = false;
    document.getElementById('signin-error').textContent = e.status === 403
      ? 'That is a client key. Sign in with an admin key.' : 'Sign-in failed: ' + e.message;
  }
}

function signOut() {
  sessionStorage.removeItem(KEY);
  clearInterval(pollTimer);
  location.reload();
}

/**
 * The server refused a signed-in dashboard's key: 401, it is no longer a key (rotated or removed), or 403, it is not an
 * admin key (any more). Stop polling, take every piece of the org's data off the page and ask for a key again, saying
 * why (with the API's own words for a 403) and what was not saved.
 */
function keyRefused(code, message) {
  const unsaved = [...editors.values()].filter(isDirty).map(ed => ed.base.alias);
  signedIn = false;
  session++;
  clearInterval(pollTimer);
  pollTimer = null;
  clearTimeout(countdownTimer);
  sessionStorage.removeItem(KEY);
  editors = new Map();
  document.getElementById('groups').replaceChildren();
  for (const id of ['slo-table', 'audit-table', 'explain-table']) {
    document.querySelector('#' + id + ' tbody').replaceChildren();
  }
  partialNote('audit-partial', null);
  resetUsage();
  document.getElementById('aliases').replaceChildren();
  document.getElementById('keys').replaceChildren();
  document.getElementById('charts').replaceChildren();
  document.getElementById('explain-summary').textContent = '';
  document.getElementById('explain-body').value = '';
  document.getElementById('whoami').textContent = '';
  status('');
  document.getElementById('app').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('signin').hidden = false;
  document.getElementById('signin-error').textContent = (code === 403
    ? 'Your key is not an admin key (403): ' + message.replace(/([^.!?])$/, '$1.') + ' Sign in with an admin key.'
    : 'Your admin key is no longer accepted (401): it may have been rotated or removed. Sign in again.')
    + (unsaved.length ? ' Unsaved changes to ' + unsaved.join(', ') + ' were not saved.' : '');
  document.getElementById('admin-key').focus();
}

// ---- groups: editor and live health --------------------------------------------------------------------------

/** One poll: the groups (an edit made elsewhere shows up in the editor) and then their live health. */
async function tick() {
  if (ticking) return;
  ticking = true;
  const own = session;
  try {
    await loadGroups();
    // how many polls have reached the editors (a test can wait for the next one)
    const root = document.getElementById('groups');
    root.dataset.polls = String(Number(root.dataset.polls || 0) + 1);
  } catch (e) {
    failed('Groups unavailable: ', e);
  }
  try {
    // the groups' answer may have ended the session (the key was refused): its health is not to be read any more
    if (own === session) await refresh();
    if (own === session && usageDue()) await loadUsage();
  } finally {
    ticking = false;
  }
}

/** Reads every group and brings each editor up to date without touching what its user has typed. */
async function loadGroups() {
  const asked = writes;
  const data = await api('GET', '/admin/groups');
  if (asked === writes) syncGroups(data.groups);
  return data.groups;
}

function syncGroups(groups) {
  const root = document.getElementById('groups');
  const seen = new Set();
  let prev = null;
  for (const g of groups) {
    seen.add(g.alias);
    let ed = editors.get(g.alias);
    if (ed) {
      serverSays(ed, g);
    } else {
      ed = { base: g, current: g };
      editors.set(g.alias, ed);
      render(ed);
    }
    const want = prev ? prev.nextSibling : root.firstChild;
    if (ed.form !== want) root.insertBefore(ed.form, want);
    prev = ed.form;
  }
  for (const [alias, ed] of editors) {
    if (!seen.has(alias)) { ed.form.remove(); editors.delete(alias); }
  }
  for (const ed of editors.values()) updateAddMember(ed);
  // the alias filters' suggestions, rebuilt only when the aliases change (not under an open list on every poll)
  const list = document.getElementById('aliases');
  if ([...list.options].map(o => o.value).join('\u0000') !== [...editors.keys()].join('\u0000')) {
    list.replaceChildren(...[...editors.keys()].map(a => el('option', { value: a })));
  }
}

/** The server's group as it is now: shown at once unless the user has unsaved changes in this editor. */
function serverSays(ed, g) {
  ed.current = g;
  updateFlags(ed);
  if (g.revision !== ed.base.revision && !isDirty(ed)) adopt(ed, g);
  else updateMarks(ed);
}

/** Resets the editor to a server group (after a save, or when nothing typed would be lost). */
function adopt(ed, g) {
  const sameMembers = ed.base.members.map(m => m.route).join('\u0000') === g.members.map(m => m.route).join('\u0000');
  ed.base = g;
  ed.current = g;
  if (!sameMembers) {
    render(ed);
    return;
  }
  for (const field of editFields(ed)) field.value = valueIn(g, field);
  updateFlags(ed);
  updateMarks(ed);
}

function member(g, route) {
  return g.members.find(m => m.route === route);
}

/** Every field of a group's editor: its strategy, each member's weight and priority, each of its other settings. */
function editFields(ed) {
  return ed.form.querySelectorAll('select[data-field="strategy"], input[data-route], [data-setting]');
}

/** A setting of the group's `settings` by its dotted name (breaker.max_fails). */
function settingOf(settings, name) {
  return name.split('.').reduce((at, key) => at === null || at === undefined ? null : at[key], settings);
}

/** A setting's value as its field shows it: a list as "a, b", no value (the default: none) as empty. */
function shown(v) {
  return v === null || v === undefined ? '' : Array.isArray(v) ? v.join(', ') : String(v);
}

/** What a field shows for the server's group `g`; null when `g` no longer has the field's member. */
function valueIn(g, field) {
  if (field.dataset.setting) return shown(settingOf(g.settings, field.dataset.setting));
  if (field.dataset.route) {
    const m = member(g, field.dataset.route);
    return m ? String(m[field.dataset.field]) : null;
  }
  return g.strategy;
}

function fieldLabel(field) {
  return field.dataset.setting || (field.dataset.route ? field.dataset.route + ' ' + field.dataset.field : 'strategy');
}

/** Fields whose value differs from what the editor started from. */
function changedFields(ed) {
  const changed = [];
  for (const field of editFields(ed)) {
    const was = valueIn(ed.base, field);
    if (field.value !== was) changed.push({ el: field, label: fieldLabel(field), from: was, to: field.value });
  }
  return changed;
}

function isDirty(ed) {
  return changedFields(ed).length > 0;
}

/**
 * Marks what is not in effect: a field the user changed is marked unsaved, and any field showing something other than
 * what the server has now gets "in effect: …" beside it; the group's note says why (unsaved, refused, or changed
 * elsewhere while being edited).
 */
function updateMarks(ed) {
  const changed = new Set(changedFields(ed).map(c => c.el));
  for (const field of editFields(ed)) {
    const effect = valueIn(ed.current, field);
    field.classList.toggle('unsaved', changed.has(field));
    // a field the refused save was faulted for, while it still holds that value: a member's by its route, a
    // setting's by the field of the edit the API named (failover_criteria[1] is the failover_criteria field)
    const invalid = changed.has(field) && (ed.invalid || []).some(x => x.route
      ? field.dataset.route === x.route && field.dataset.field === x.field
      : x.param !== undefined && (field.dataset.setting || (field.dataset.route ? null : 'strategy'))
        === x.param.replace(/\[\d+\]$/, ''));
    if (invalid) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
    const hint = ed.form.querySelector('#' + CSS.escape(field.id + '-effect'));
    hint.hidden = field.value === effect;
    hint.textContent = hint.hidden ? '' : effect === null ? 'no longer a member'
      : 'in effect: ' + (effect === '' ? 'none (the default)' : effect);
  }
  const note = ed.form.querySelector('.group-note');
  const dirty = changed.size > 0;
  if (!dirty) {
    ed.error = null;
    ed.invalid = null;
  }
  ed.form.querySelector('button.discard').hidden = !dirty;
  let text;
  if (dirty && ed.current.revision !== ed.base.revision) {
    text = ed.base.alias + ' was changed elsewhere while you were editing (now: strategy '
      + ed.current.strategy + ', weights ' + ed.current.members.map(m => m.route + ' ' + m.weight).join(', ')
      + '). Saving your values would overwrite that change, so a save is refused: discard your changes to load it.';
  } else if (dirty) {
    text = (ed.error ? 'Not saved: ' + ed.error.replace(/([^.!?])$/, '$1.') + ' ' : '')
      + 'The values marked unsaved are not in effect; what is in effect is shown beside them.';
  } else {
    text = '';
  }
  // the note is an alert: rewritten on every keystroke, it would be announced again each time
  sayOnce(note, text);
  note.className = 'group-note' + (dirty && (ed.error || ed.current.revision !== ed.base.revision) ? ' error'
    : dirty ? ' unsaved-note' : '');
}

/**
 * A name as part of an element id, one to one: every character but a letter or digit is written as _hex_, so r.1 and
 * r_1 (and gpt-4.1 and gpt-4_1) get ids of their own, and parts joined with '-' cannot run into each other. Cleaning
 * them to '_' gave two members one id: a hint showed beside the other's field and a label focused the other's input
 * (found by hunt21).
 */
function idPart(name) {
  return String(name).replace(/[^A-Za-z0-9]/g, c => '_' + c.charCodeAt(0).toString(16) + '_');
}

function render(ed) {
  const g = ed.base;
  const alias = g.alias;
  const sid = 'strategy-' + idPart(alias);
  const select = el('select', { id: sid, 'data-alias': alias, 'data-field': 'strategy',
    'aria-describedby': sid + '-effect' });
  for (const s of STRATEGIES) select.append(el('option', { value: s, selected: s === g.strategy, text: s }));
  ed.cells = new Map();
  ed.rows = new Map();
  ed.usageHead = el('th', { scope: 'col', text: usageHeading(g) });
  const tbody = el('tbody');
  for (const m of g.members) tbody.append(memberRow(ed, m));
  const form = el('form', { class: 'group', 'data-alias': alias, 'aria-label': 'Group ' + alias },
    el('div', { class: 'group-head' },
      el('h3', { text: alias }),
      el('label', { for: sid, text: 'Strategy' }), select,
      el('span', { class: 'in-effect', id: sid + '-effect', hidden: true }),
      el('button', { type: 'submit', class: 'primary', text: 'Save ' + alias }),
      el('button', { type: 'button', class: 'discard', text: 'Discard changes', hidden: true,
        'aria-label': 'Discard changes to ' + alias, onclick: () => {
          adopt(ed, ed.current);
          notice('Discarded the unsaved changes to ' + alias + '; the editor shows the values in effect.');
        } })),
    el('p', { class: 'group-note', role: 'alert' }),
    el('table', {},
      el('caption', { class: 'visually-hidden', text: 'Members of ' + alias }),
      el('thead', {}, el('tr', {}, ...['Route', 'Provider / model', 'Weight', 'Priority', 'State', 'Breaker',
        'In flight'].map(h => el('th', { scope: 'col', text: h })), ed.usageHead,
        el('th', { scope: 'col', text: 'Actions' }))),
      tbody),
    addMemberBlock(ed),
    settingsBlock(ed));
  form.addEventListener('submit', ev => { ev.preventDefault(); saveGroup(ed); });
  form.addEventListener('input', () => {
    clearNotice();
    updateMarks(ed);
  });
  form.addEventListener('change', () => updateMarks(ed));
  if (ed.form) ed.form.replaceWith(form);
  ed.form = form;
  updateFlags(ed);
  updateMarks(ed);
  updateAddMember(ed);
}

/**
 * "Add a route": attaches one of the org's routes that is not in this group to its alias (PUT /admin/routes/alias),
 * moving it from the alias it has; its options are filled by updateAddMember from the groups the last poll read.
 */
function addMemberBlock(ed) {
  const alias = ed.base.alias;
  const id = 'add-' + idPart(alias);
  const select = el('select', { id, class: 'add-member', 'data-alias': alias });
  ed.addSelect = select;
  const add = el('button', { type: 'button', class: 'add-member', 'aria-label': 'Add the chosen route to ' + alias,
    text: 'Add to ' + alias, onclick: () => {
      const route = select.value;
      if (!route) return;
      act('PUT', '/admin/routes/alias', { route, alias }, after => 'Added ' + route + ' to ' + alias + ' (it was in '
        + after.previous_alias + '): ' + alias + ' is now a group of ' + after.group.members.map(m => m.route)
          .join(', ') + '.' + (after.removed_alias ? ' ' + after.removed_alias + ' had no other route and was removed.'
          : ''), 'Not added: ');
    } });
  return el('p', { class: 'add-member' }, el('label', { for: id, text: 'Add a route to ' + alias }), ' ', select, ' ',
    add);
}

/**
 * The add-a-route choices of a group: every route of the org in another alias, of the same kind (chat or embeddings:
 * an alias never mixes them), named with the alias it leaves and, when it is that alias's only route, that the alias
 * goes with it. Rebuilt only when they change, so an open list is not redrawn under the user on every poll.
 */
function updateAddMember(ed) {
  if (!ed.addSelect) return;
  const kind = ed.current.members.length ? ed.current.members[0].embeddings : false;
  const options = [];
  for (const other of editors.values()) {
    if (other === ed) continue;
    const g = other.current;
    for (const m of g.members) {
      if (Boolean(m.embeddings) !== Boolean(kind)) continue;
      options.push({ value: m.route, text: m.route + ' (' + m.provider + ' / ' + m.model + ', in ' + g.alias
        + (g.members.length === 1 ? '; its only route: ' + g.alias + ' will be removed' : '') + ')' });
    }
  }
  options.sort((a, b) => a.value.localeCompare(b.value));
  const select = ed.addSelect;
  const want = options.map(o => o.value + '\u0001' + o.text).join('\u0000');
  if (select.dataset.options === want) return;
  const chosen = select.value;
  select.replaceChildren(el('option', { value: '', text: options.length ? 'choose a route…' : 'no other route' }),
    ...options.map(o => el('option', { value: o.value, text: o.text, selected: o.value === chosen })));
  select.dataset.options = want;
}

/**
 * The group's other settings, folded away under its members: one field per setting, named and written as in
 * hedgerow.yaml (the API's `settings`), saved with the strategy and weights. Only the settings changed are sent.
 */
function settingsBlock(ed) {
  const alias = ed.base.alias;
  const fields = [];
  const walk = (obj, prefix) => {
    for (const [k, v] of Object.entries(obj)) {
      const name = prefix + k;
      if (name === 'strategy') continue;
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) walk(v, name + '.');
      else fields.push(name);
    }
  };
  walk(ed.base.settings, '');
  const grid = el('div', { class: 'settings-grid' });
  for (const name of fields) {
    const id = 's-' + idPart(alias) + '-' + idPart(name);
    const value = shown(settingOf(ed.base.settings, name));
    let field;
    if (SETTING_CHOICES[name]) {
      field = el('select', { id, 'data-setting': name, 'aria-describedby': id + '-effect' });
      for (const c of SETTING_CHOICES[name]) field.append(el('option', { value: c, selected: c === value, text: c }));
    } else {
      field = el('input', { id, 'data-setting': name, value, size: name === 'failover_criteria' ? 40 : 12,
        'aria-describedby': id + '-effect', placeholder: 'default', spellcheck: 'false' });
    }
    grid.append(el('label', { for: id, text: name }),
      el('span', {}, field, el('span', { class: 'in-effect', id: id + '-effect', hidden: true })));
  }
  return el('details', { class: 'settings' },
    el('summary', { text: 'Settings of ' + alias + ' (hedging, breaker, retries, timeouts, …)' }),
    el('p', { class: 'hint', text: 'As hedgerow.yaml writes them. Durations take their unit (500ms, 30s, 2m; Kong\'s '
      + 'timeouts also a whole number of milliseconds); failover_criteria is a list (error, timeout, http_429, …). '
      + 'An emptied field goes back to its default.' }),
    grid);
}

/** A setting's field as the edit sends it: empty is null (the default), a list split, a number or boolean as such. */
function settingValue(field) {
  const text = field.value.trim();
  if (text === '') return null;
  if (field.dataset.setting === 'failover_criteria') return text.split(',').map(x => x.trim()).filter(x => x);
  if (text === 'true' || text === 'false') return text === 'true';
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

function memberRow(ed, m) {
  const alias = ed.base.alias;
  const base = 'm-' + idPart(alias) + '-' + idPart(m.route);
  // required: an emptied field would otherwise go out as Number('') = 0
  const weight = el('input', { type: 'number', min: '0', id: base + '-weight', value: String(m.weight),
    'data-route': m.route, 'data-field': 'weight', 'aria-describedby': base + '-weight-effect', required: true });
  const priority = el('input', { type: 'number', min: '0', id: base + '-priority', value: String(m.priority),
    'data-route': m.route, 'data-field': 'priority', 'aria-describedby': base + '-priority-effect', required: true });
  const effect = input => el('span', { class: 'in-effect', id: input.id + '-effect', hidden: true });
  // the state's words in their own span, so that an "as of" mark after them survives their rewriting
  const words = el('span', { text: '…' });
  const state = el('span', { class: 'state', 'data-route': m.route, 'data-cell': 'state' }, words);
  const breaker = el('span', { 'data-cell': 'breaker' });
  const inflight = el('span', { 'data-cell': 'inflight' });
  const usage = el('span', { 'data-cell': 'usage' });
  // a judged group's member: the judge's scores of its answers, in words (filled by the health poll)
  const accuracy = el('span', { class: 'accuracy', 'data-cell': 'accuracy', 'data-route': m.route });
  // pin and drain act on the member as the server last showed it, not as it was when this row was built
  const now = () => member(ed.current, m.route) || m;
  const pin = el('button', { type: 'button', onclick: () => {
    const c = now();
    act('POST', c.pinned ? '/admin/members/unpin' : '/admin/members/pin', c.pinned ? { alias } : { route: m.route },
      (c.pinned ? 'Unpinned ' : 'Pinned ') + m.route);
  } });
  const drain = el('button', { type: 'button', onclick: () => {
    const c = now();
    act('POST', '/admin/members/drain', { route: m.route, drained: !c.drained },
      (c.drained ? 'Undrained ' : 'Drained ') + m.route);
  } });
  // shown while the route is out for its health (cooling down, half-open, a Retry-After hold): puts it back at once
  const reset = el('button', { type: 'button', class: 'reset', hidden: true, text: 'Reset',
    'aria-label': 'Reset the health of ' + m.route, onclick: () => act('POST', '/admin/routes/reset', { route: m.route },
      after => 'Reset the health of ' + m.route + ': it was ' + stateWords(after.previous_state) + ', it is '
        + stateWords(after.state) + ' now.', 'Not reset: ') });
  const name = el('th', { scope: 'row' });
  ed.cells.set(m.route, { state, words, breaker, inflight, usage, accuracy, reset });
  ed.rows.set(m.route, { name, pin, drain });
  return el('tr', { 'data-route': m.route }, name,
    el('td', { text: m.provider + ' / ' + m.model }),
    el('td', {}, el('label', { for: weight.id, class: 'visually-hidden', text: 'Weight of ' + m.route }), weight,
      effect(weight)),
    el('td', {}, el('label', { for: priority.id, class: 'visually-hidden', text: 'Priority of ' + m.route }), priority,
      effect(priority)),
    el('td', {}, state), el('td', {}, breaker), el('td', {}, inflight), el('td', {}, usage, accuracy),
    el('td', {}, pin, ' ', drain, ' ', reset));
}

/** Pinned / drained as the server shows them now (they are not part of the edit, so they are always current). */
function updateFlags(ed) {
  for (const m of ed.current.members) {
    const row = ed.rows.get(m.route);
    if (!row) continue;
    row.name.textContent = m.route + (m.pinned ? ' (pinned)' : '') + (m.drained ? ' (drained)' : '');
    row.pin.textContent = m.pinned ? 'Unpin' : 'Pin';
    row.pin.setAttribute('aria-label', (m.pinned ? 'Unpin ' : 'Pin ') + m.route);
    row.drain.textContent = m.drained ? 'Undrain' : 'Drain';
    row.drain.setAttribute('aria-label', (m.drained ? 'Undrain ' : 'Drain ') + m.route);
  }
}

/** An action on a member; `done` is its confirmation, or makes it from the API's answer. */
async function act(method, path, body, done, refused = 'Not saved: ') {
  try {
    const answer = await api(method, path, body);
    writes++;
    notice(typeof done === 'function' ? done(answer) : done);
    await loadGroups();
    await refresh();
  } catch (e) {
    failed(refused, e);
  }
}

function groupPath(alias) {
  return '/admin/groups/' + encodeURIComponent(alias).replace(/%2F/g, '/');
}

async function saveGroup(ed) {
  const alias = ed.base.alias;
  const members = {};
  for (const input of ed.form.querySelectorAll('input[data-route]')) {
    const r = input.dataset.route;
    members[r] = members[r] || { route: r };
    members[r][input.dataset.field] = Number(input.value);
  }
  const strategy = ed.form.querySelector('select[data-field="strategy"]').value;
  const edit = { strategy, members: Object.values(members) };
  // the settings changed, nested as the file nests them (breaker.max_fails); the others keep their value
  for (const c of changedFields(ed)) {
    const name = c.el.dataset.setting;
    if (!name) continue;
    const path = name.split('.');
    let at = edit;
    for (const key of path.slice(0, -1)) at = at[key] = at[key] || {};
    at[path[path.length - 1]] = settingValue(c.el);
  }
  const tried = changedFields(ed).map(c => c.label + ' ' + c.from + ' → ' + c.to).join(', ') || 'no change';
  ed.error = null;
  ed.invalid = null;
  try {
    // saved only if the group is still the one these values were edited from
    const saved = await api('PUT', groupPath(alias), edit, { 'if-match': '"' + ed.base.revision + '"' });
    writes++;
    adopt(ed, saved);
    notice('Saved ' + alias + ': strategy ' + saved.strategy + '.');
    await refresh();
  } catch (e) {
    if (e.quiet) return;
    if (e.status === 412) {
      try {
        const current = await api('GET', groupPath(alias));
        writes++;
        adopt(ed, current);
      } catch (e2) {
        if (e2.quiet) return;
      }
      status('Not saved: ' + alias + ' was changed elsewhere since you loaded it, so your edit (' + tried
        + ') was not applied. The editor now shows the values in effect; make your change again if you still want it.',
      true);
      return;
    }
    // the refused values stay for the user to correct, marked as not in effect
    ed.error = e.message;
    ed.invalid = e.errors.filter(x => x.route || x.param).map(x => x.route
      ? { route: x.route, field: x.path.replace(/^routes\[\d+\]\.?/, '') } : { param: x.param });
    // a refusal of the request itself (a malformed members list) names its field in the envelope's param alone
    if (!e.errors.length && e.param) ed.invalid.push({ param: e.param });
    updateMarks(ed);
    status('Not saved: ' + e.message + ' (the values marked unsaved are not in effect)', true);
  }
}

/** Whether a group ranks its members by a judge's scores (lowest_usage by llm_accuracy: only such a group has one). */
function judged(g) {
  return Boolean(g.settings && g.settings.judge);
}

/** The members table's usage column: a judged group's also shows each member's judged accuracy. */
function usageHeading(g) {
  return judged(g) ? 'Usage (tokens), judged accuracy' : 'Usage (tokens)';
}

/**
 * A member's judged accuracy in words, from its health (`accuracy: {score, samples}`, null before the first score):
 * "accuracy 87/100 (3 scores)", the decayed mean rounded to a whole number; nothing for a group without a judge.
 */
function accuracyText(g, m) {
  if (!judged(g)) return '';
  if (!m.accuracy) return 'accuracy: not judged yet';
  const n = m.accuracy.samples;
  return 'accuracy ' + Math.round(m.accuracy.score) + '/100 (' + n.toLocaleString()
    + (n === 1 ? ' score)' : ' scores)');
}

/** A member's state in words; `left` is what remains of a state that counts down, in whole seconds. */
function stateText(m, left) {
  switch (m.state) {
    case 'cooling_down': return 'cooling down (' + left + ' s left)';
    case 'half_open': return m.probe_in_flight ? 'half-open (probe in flight)' : 'half-open';
    case 'retry_after': return 'retry-after hold (' + left + ' s left)';
    case 'failing_verification': return 'failing verification';
    default: return m.state.replace('_', ' ');
  }
}

/** A member's state in words, without a countdown (for a sentence about it). */
function stateWords(state) {
  return { half_open: 'half-open', retry_after: 'under a Retry-After hold' }[state] || state.replace('_', ' ');
}

/** How long the member's state lasts from the read (ms), for a state that counts down; null for any other. */
function countdownMs(m) {
  return m.state === 'cooling_down' ? m.cooldown_remaining_ms : m.state === 'retry_after' ? m.retry_after_ms : null;
}

/** Writes a member's state into its cell as of `now`: a countdown shows the whole seconds left until its deadline. */
function drawState(c, now) {
  c.words.textContent = stateText(c.m, c.until === null ? null : Math.max(0, Math.ceil((c.until - now) / 1000)));
}

/**
 * Redraws every countdown from its deadline and sleeps until the next moment one of them shows a second less, so a
 * countdown ticks every second from the deadline the last read gave, without a poll in between.
 */
function countdown() {
  clearTimeout(countdownTimer);
  countdownTimer = null;
  const now = Date.now();
  let next = Infinity;
  for (const ed of editors.values()) {
    for (const c of ed.cells.values()) {
      if (!c.until) continue;
      drawState(c, now);
      const left = c.until - now;
      if (left > 0) next = Math.min(next, (left - 1) % 1000 + 1);
    }
  }
  if (next !== Infinity) countdownTimer = setTimeout(countdown, next);
}

async function refresh() {
  const table = document.getElementById('slo-table');
  let data;
  try {
    data = await api('GET', '/admin/health');
  } catch (e) {
    if (e.quiet) return;
    // what the cells, the SLO table and the charts show is no longer live: say so on each, and since when
    const since = healthAt ? healthAt.toLocaleTimeString() : 'never';
    for (const ed of editors.values()) {
      for (const c of ed.cells.values()) asOf(c.state, since);
    }
    asOf(table, since, table.caption);
    for (const f of document.querySelectorAll('#charts figure')) asOf(f, since, f.querySelector('figcaption'));
    healthFailing = true;
    status('Health unavailable: ' + e.message.replace(/\.$/, '') + '. The states, SLO table and charts shown are as of '
      + since + ', not live.', true);
    return;
  }
  healthAt = new Date(data.time);
  const readAt = Date.now();
  if (healthFailing) {
    healthFailing = false;
    if (document.getElementById('status').textContent.startsWith('Health unavailable')) status('');
  }
  asOf(table, null, table.caption);
  const slo = table.tBodies[0];
  slo.replaceChildren();
  const charts = document.getElementById('charts');
  charts.replaceChildren();
  charts.className = 'charts';
  for (const g of data.groups) {
    const ed = editors.get(g.alias);
    // the group as the poll's groups read last showed it (a judge added or removed through the API shows here)
    if (ed) ed.usageHead.textContent = usageHeading(ed.current);
    for (const m of g.members) {
      const c = ed?.cells.get(m.route);
      if (c) {
        const ms = countdownMs(m);
        c.m = m;
        c.until = ms === null ? null : readAt + ms;
        drawState(c, readAt);
        c.state.className = 'state state-' + m.state;
        c.state.dataset.state = m.state;
        asOf(c.state, null);
        c.breaker.textContent = m.max_fails > 0 ? m.fails + ' / ' + m.max_fails + ' fails'
          : m.fails + ' fails (no breaker)';
        // out for its health, whatever else holds it (a drained route cooling down is reset as well)
        c.reset.hidden = !(m.cooling_down || m.half_open || m.retry_after_ms > 0);
        c.inflight.textContent = String(m.inflight);
        c.usage.textContent = (m.usage.prompt_tokens + m.usage.completion_tokens).toLocaleString();
        c.accuracy.textContent = accuracyText(ed.current, m);
      }
      if (m.embeddings) {
        // no speed targets (no decode, no first token), but a verdict: the prober's known-answer check of its vectors
        // or an operator's, with its Clear button (it was drawn nowhere; hunt28)
        slo.append(el('tr', { 'data-route': m.route },
          el('th', { scope: 'row', text: g.alias + ' / ' + m.route }),
          el('td', { colspan: '5', class: 'slo-embeddings', text: 'embeddings: no speed targets' }),
          verificationCell(m),
          el('td', { text: m.standing })));
        continue;
      }
      slo.append(el('tr', { 'data-route': m.route },
        el('th', { scope: 'row', text: g.alias + ' / ' + m.route }),
        el('td', { class: 'slo-' + m.slo.status, text: m.slo.status }),
        // never measured (no answer of two tokens or more yet, nor a capacity report): no speed, as the TTFT cell
        el('td', { text: m.slo.decode_tokens_per_second > 0 ? m.slo.decode_tokens_per_second.toFixed(1) : '—' }),
        el('td', { text: '≥ ' + m.slo.target_decode_tokens_per_second }),
        el('td', { text: m.measured ? m.slo.ttft_standard_ms.toFixed(0) : '—' }),
        el('td', { text: '≤ ' + m.slo.target_first_token_ms }),
        verificationCell(m),
        el('td', { text: m.standing })));
      charts.append(chart(g.alias, m));
    }
  }
  countdown();
}

/**
 * A route's verification in effect and whose it is (`verification_by`: the operator's verdict, kept until cleared,
 * or the prober's); an operator's verdict comes with a Clear button, which hands the route back to the prober's
 * verdicts (`"verification": null`).
 */
function verificationCell(m) {
  const cell = el('td', { 'data-cell': 'verification', 'data-route': m.route },
    el('span', { 'data-verdict': '', text: m.verification || '—' }),
    m.verification_by ? el('span', { class: 'verdict-by', 'data-by': m.verification_by,
      text: ' (' + (m.verification_by === 'operator' ? 'set by an operator' : 'by the prober') + ')' }) : null);
  if (m.verification_by === 'operator') {
    cell.append(' ', el('button', { type: 'button', class: 'clear-verdict', text: 'Clear',
      'aria-label': 'Clear the operator\'s verification of ' + m.route,
      onclick: () => act('PUT', '/admin/routes/verification', { route: m.route, verification: null },
        'Cleared the operator\'s verification of ' + m.route + ' (it was ' + m.verification
          + '): the prober\'s verdicts apply again.', 'Not cleared: ') }));
  }
  return cell;
}

/**
 * Marks what `node` shows as read at `since` and not live (dimmed, with "(as of <since>)" at the end of `note`), or,
 * with `since` null, as live again. The members' states, the SLO table and the charts are marked this one way.
 */
function asOf(node, since, note = node) {
  let mark = note.querySelector(':scope > .as-of');
  node.classList.toggle('stale', since !== null);
  if (since === null) {
    delete node.dataset.stale;
    mark?.remove();
    return;
  }
  node.dataset.stale = 'true';
  if (!mark) note.append(mark = el('span', { class: 'as-of' }));
  mark.textContent = ' (as of ' + since + ')';
}

// ---- TTFT chart: prediction line and measured points, log2 prompt axis ----------------------------------------

function chart(alias, m) {
  const W = 320, H = 180, L = 44, R = 10, T = 10, B = 30;
  const pred = m.predicted_ttft;
  const pts = m.samples;
  const minX = Math.log2(16), maxX = Math.log2(pred[pred.length - 1].prompt_tokens);
  const maxY = Math.max(1, ...pred.map(p => p.p90_ms), ...pts.map(p => p.ttft_ms)) * 1.1;
  const x = t => L + (Math.log2(Math.max(16, t)) - minX) / (maxX - minX) * (W - L - R);
  const y = ms => H - B - ms / maxY * (H - T - B);
  const title = 'Predicted TTFT of ' + m.route;
  const svg = svgEl('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': title + ': ' + pred.map(p => p.prompt_tokens + ' tokens ' + Math.round(p.mean_ms) + ' ms').join(', ')
      + '; ' + pts.length + ' measured points' });
  svg.append(svgEl('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }));
  svg.append(svgEl('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
  for (const p of pred) {
    const t = svgEl('text', { x: x(p.prompt_tokens), y: H - B + 14, 'text-anchor': 'middle' });
    t.textContent = p.prompt_tokens >= 1024 ? (p.prompt_tokens / 1024) + 'k' : String(p.prompt_tokens);
    svg.append(t);
  }
  for (const frac of [0, 0.5, 1]) {
    const t = svgEl('text', { x: L - 4, y: y(maxY * frac / 1.1) + 3, 'text-anchor': 'end' });
    t.textContent = Math.round(maxY * frac / 1.1) + '';
    svg.append(t);
  }
  const ax = svgEl('text', { x: W - R, y: H - 2, 'text-anchor': 'end' });
  ax.textContent = 'prompt tokens';
  svg.append(ax);
  svg.append(svgEl('polyline', { fill: 'none', stroke: '#2f6b3a', 'stroke-width': 2,
    points: pred.map(p => x(p.prompt_tokens) + ',' + y(p.mean_ms)).join(' ') }));
  svg.append(svgEl('polyline', { fill: 'none', stroke: '#2f6b3a', 'stroke-dasharray': '3 3',
    points: pred.map(p => x(p.prompt_tokens) + ',' + y(p.p90_ms)).join(' ') }));
  for (const p of pts) {
    svg.append(svgEl('circle', { cx: x(p.prompt_tokens), cy: y(p.ttft_ms), r: 3, fill: '#e0a000',
      'data-point': '1' }));
  }
  return el('figure', { 'data-route': m.route }, svg,
    el('figcaption', { text: alias + ' / ' + m.route + (m.measured ? '' : ' (prior: not measured yet)')
      + ' — solid: mean, dashed: P90, dots: ' + pts.length + ' measured' }));
}

// ---- audit ---------------------------------------------------------------------------------------------------

async function loadAudit() {
  const q = new URLSearchParams();
  for (const [id, name] of [['audit-type', 'type'], ['audit-alias', 'alias'], ['audit-reason', 'reason'],
    ['audit-limit', 'limit']]) {
    const v = document.getElementById(id).value.trim();
    if (v) q.set(name, v);
  }
  const body = document.querySelector('#audit-table tbody');
  try {
    const data = await api('GET', '/admin/audit?' + q);
    partialNote('audit-partial', data);
    body.replaceChildren();
    for (const e of data.events) {
      const detail = e.type === 'request'
        ? (e.attempt_trail || []).map(a => a.route + ':' + a.outcome + (a.error ? '(' + a.error + ')' : ''))
          .join(' → ')
        : e.message;
      body.append(el('tr', {},
        el('td', { text: e.time || '' }), el('td', { text: e.type }), el('td', { text: e.alias || '' }),
        el('td', { text: e.type === 'request' ? 'status ' + e.status : e.type === 'admin' ? e.action : e.reason }),
        el('td', { text: detail })));
    }
    if (!data.events.length) body.append(el('tr', {}, el('td', { colspan: '5', text: 'No events.' })));
  } catch (e) {
    failed('Audit unavailable: ', e);
  }
}

// ---- usage: what the org was billed, per alias, per client key and per UTC day ------------------------------

const count = n => n.toLocaleString();
// the API gives cost to at most nine decimals (a nano-unit): shown as given, 0.0006772 rather than 0.001
const money = n => n.toLocaleString(undefined, { maximumFractionDigits: 9 });

/**
 * Whether a poll reads usage again: only while what it shows can change, a range that reaches today (UTC: the ledger's
 * days), one left without an end (the API's default ends today, whichever day that is by now) or one whose read
 * failed. A past range is read once, and a refused query not again until the form changes.
 */
function usageDue() {
  const today = new Date().toISOString().slice(0, 10);
  return !usagePanel.refused && (usagePanel.failing || usagePanel.openEnded || usagePanel.to === null
    || usagePanel.to >= today);
}

/** Applies the form: its dates, alias and key (each empty = the API's default) become the query the panel shows. */
function applyUsage() {
  const q = new URLSearchParams();
  for (const name of USAGE_FIELDS) {
    const v = document.getElementById('usage-' + name).value.trim();
    if (v) q.set(name, v);
  }
  usagePanel.query = q.toString();
  usagePanel.openEnded = !q.has('to');
  usagePanel.to = null;
  usagePanel.refused = false;
  return loadUsage();
}

async function loadUsage() {
  const seq = ++usagePanel.seq;
  const view = document.getElementById('usage-view');
  const summary = document.getElementById('usage-summary');
  let data;
  try {
    data = await api('GET', '/admin/usage' + (usagePanel.query ? '?' + usagePanel.query : ''));
  } catch (e) {
    if (e.quiet || seq !== usagePanel.seq) return;
    if (e.status === 400) {
      // the query itself is wrong (a bad date, from after to, too long a span, an unknown key): the API's words, no
      // figures
      usagePanel.refused = true;
      usagePanel.failing = false;
      drawUsage(null);
      usageError(e.message, e.param);
      return;
    }
    // the figures shown are no longer live: say so, and since when (on the panel's own line, which the poll's other
    // reads do not overwrite)
    const since = usagePanel.at ? usagePanel.at.toLocaleTimeString() : 'never';
    usagePanel.failing = true;
    asOf(view, since, summary);
    usageError('Usage unavailable: ' + e.message.replace(/\.$/, '') + '. The figures shown are as of ' + since
      + ', not live.', null);
    return;
  }
  if (seq !== usagePanel.seq) return;
  usagePanel.at = new Date();
  usagePanel.to = data.to;
  usagePanel.failing = false;
  usageError('', null);
  drawUsage(data);
}

/** The panel's alert line (the API's refusal of the query, or reads failing), with the field `param` names marked. */
function usageError(message, param) {
  const line = document.getElementById('usage-error');
  // an alert: the poll writing the same words again would announce them again
  sayOnce(line, message);
  for (const name of USAGE_FIELDS) {
    const input = document.getElementById('usage-' + name);
    if (name === param) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

/**
 * Says above a panel when its answer holds only what this instance recorded (`partial`: the shared state store did
 * not answer it, so its usage or events are this instance's, not the fleet's), in the API's words; nothing otherwise
 * or with no answer (null).
 */
function partialNote(id, data) {
  const note = document.getElementById(id);
  const text = data && data.partial ? 'Partial: ' + (data.partial_reason || 'this instance\'s records only.') : '';
  // a status line: the poll writing the same words again would announce them again
  sayOnce(note, text);
}

/**
 * Draws a usage answer: the range and its totals, per alias (totals below), per client key (with the aliases each
 * billed), per day as bars and rows; null: none.
 */
function drawUsage(data) {
  const view = document.getElementById('usage-view');
  const summary = document.getElementById('usage-summary');
  const table = document.getElementById('usage-aliases');
  const keys = document.querySelector('#usage-keys tbody');
  const days = document.querySelector('#usage-days tbody');
  const figures = u => [count(u.requests), count(u.prompt_tokens), count(u.completion_tokens), count(u.total_tokens),
    money(u.cost)].map(text => el('td', { class: 'num', text }));
  const nothing = cols => el('tr', {}, el('td', { colspan: String(cols), text: 'Nothing billed in this range.' }));
  asOf(view, null, summary);
  partialNote('usage-partial', data);
  document.getElementById('usage-chart').replaceChildren();
  view.hidden = !data;
  if (!data) {
    summary.textContent = '';
    table.tBodies[0].replaceChildren();
    table.tFoot.replaceChildren();
    keys.replaceChildren();
    days.replaceChildren();
    return;
  }
  const t = data.total;
  summary.textContent = data.from + ' to ' + data.to + ' (UTC), ' + (data.alias ? 'alias ' + data.alias : 'all aliases')
    + (data.key ? ', key ' + data.key : '') + ': ' + count(t.requests) + ' requests, ' + count(t.total_tokens)
    + ' tokens, cost ' + money(t.cost) + '.';
  table.tBodies[0].replaceChildren(...data.aliases.map(a => el('tr', { 'data-alias': a.alias },
    el('th', { scope: 'row', text: a.alias }), ...figures(a))));
  if (!data.aliases.length) table.tBodies[0].append(nothing(6));
  table.tFoot.replaceChildren(el('tr', {}, el('th', { scope: 'row', text: 'Total' }), ...figures(t)));
  // each key's aliases, with the requests it sent to each (from the alias rows' per-key split)
  const aliasesOf = key => data.aliases.flatMap(a => a.keys.filter(k => k.key === key)
    .map(k => a.alias + ' (' + count(k.requests) + ')')).join(', ');
  keys.replaceChildren(...data.keys.map(k => el('tr', { 'data-key': k.key },
    el('th', { scope: 'row', text: k.key }), ...figures(k), el('td', { text: aliasesOf(k.key) }))));
  if (!data.keys.length) keys.append(nothing(7));
  days.replaceChildren(...data.days.map(d => el('tr', { 'data-date': d.date, 'data-alias': d.alias },
    el('th', { scope: 'row', text: d.date }), el('td', { text: d.alias }), ...figures(d))));
  if (!data.days.length) days.append(nothing(7));
  // a chart of a single day would be one bar saying what the rows say
  else if (data.from !== data.to) document.getElementById('usage-chart').append(usageChart(data));
}

/** Total tokens per UTC day as bars along the whole range (a day with nothing billed is a gap), as the TTFT charts. */
function usageChart(data) {
  const W = 640, H = 160, L = 56, R = 10, T = 10, B = 24;
  const DAY = 86400000;
  const start = Date.parse(data.from);
  const span = (Date.parse(data.to) - start) / DAY + 1;
  const slot = (W - L - R) / span;
  const width = Math.min(24, Math.max(1, slot * 0.8));
  const perDay = new Map();
  for (const d of data.days) perDay.set(d.date, (perDay.get(d.date) || 0) + d.total_tokens);
  const maxY = Math.max(1, ...perDay.values());
  const y = n => H - B - n / maxY * (H - T - B);
  const svg = svgEl('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'Total tokens per UTC day: ' + [...perDay].map(([d, n]) => d + ' ' + count(n)).join(', ') });
  svg.append(svgEl('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }));
  svg.append(svgEl('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
  for (const [x, text, anchor] of [[L, data.from, 'start'], [W - R, data.to, 'end']]) {
    const t = svgEl('text', { x, y: H - B + 14, 'text-anchor': anchor });
    t.textContent = text;
    svg.append(t);
  }
  for (const n of [0, maxY]) {
    const t = svgEl('text', { x: L - 4, y: y(n) + 3, 'text-anchor': 'end' });
    t.textContent = count(n);
    svg.append(t);
  }
  for (const [date, n] of perDay) {
    const bar = svgEl('rect', { x: L + ((Date.parse(date) - start) / DAY + 0.5) * slot - width / 2, y: y(n), width,
      height: H - B - y(n), fill: '#2f6b3a', 'data-date': date });
    const tip = svgEl('title');
    tip.textContent = date + ': ' + count(n) + ' tokens';
    bar.append(tip);
    svg.append(bar);
  }
  return el('figure', {}, svg, el('figcaption', { text: 'Total tokens per UTC day'
    + (data.alias ? ' of ' + data.alias : ', all aliases') + (data.key ? ', key ' + data.key : '') }));
}

/** Takes the org's usage off the page and the form back to its defaults (at sign-out, the key refused). */
function resetUsage() {
  // a read still under way belongs to the session that ended (api() drops its answer too)
  Object.assign(usagePanel, { query: '', openEnded: true, seq: usagePanel.seq + 1, to: null, at: null,
    failing: false, refused: false });
  for (const name of USAGE_FIELDS) document.getElementById('usage-' + name).value = '';
  usageError('', null);
  drawUsage(null);
}

// ---- explain: how a request body would be routed, without sending it ----------------------------------------

/** A sample chat body for the first chat alias, unless the operator has typed something already. */
function prefillExplain(groups) {
  const text = document.getElementById('explain-body');
  const chat = groups.find(g => g.members.some(m => !m.embeddings));
  if (text.value.trim() || !chat) return;
  text.value = JSON.stringify({ model: chat.alias,
    messages: [{ role: 'user', content: 'Hello! Which route would serve this?' }] }, null, 2);
}

async function explain() {
  const body = document.querySelector('#explain-table tbody');
  const summary = document.getElementById('explain-summary');
  body.replaceChildren();
  summary.textContent = '';
  let data;
  try {
    data = await api('POST', '/admin/explain', document.getElementById('explain-body').value);
  } catch (e) {
    failed('Explain failed: ', e);
    return;
  }
  notice('Explained a request to ' + data.alias + ': ' + data.outcome + '.');
  summary.textContent = 'Alias ' + data.alias + ', strategy ' + data.strategy + ', ' + data.prompt_tokens
    + ' prompt tokens, ' + (data.stream ? 'streaming' : 'not streaming')
    + (data.needs.length ? ', needs ' + data.needs.join(', ') : '') + '. Targets: first token ≤ '
    + data.slo_target.first_token_ms + ' ms, decode ≥ ' + data.slo_target.decode_tokens_per_second + ' tok/s. '
    + (data.error ? 'Outcome: ' + data.outcome + ' — ' + data.error : 'Outcome: ready.');
  summary.className = data.error ? 'error' : '';
  // candidates in the order they would be tried, then the routes a filter kept out
  const order = r => r.rank > 0 ? r.rank : Number.MAX_SAFE_INTEGER;
  const routes = [...data.routes].sort((a, b) => order(a) - order(b));
  for (const r of routes) {
    const checks = el('ul', { class: 'checks' }, ...r.checks.map(c => el('li',
      { class: c.passed ? 'check-passed' : 'check-failed', 'data-filter': c.filter, 'data-passed': String(c.passed),
        text: (c.passed ? 'passed ' : 'failed ') + c.filter + ': ' + c.detail })));
    const p = r.predicted_ttft_ms;
    body.append(el('tr', { 'data-route': r.route, 'data-rank': String(r.rank) },
      el('td', { text: r.rank > 0 ? String(r.rank) : 'not a candidate' }),
      el('th', { scope: 'row', text: r.route + (r.affinity ? ' (prefix affinity)' : '') }),
      el('td', { text: r.provider + ' / ' + r.model }),
      el('td', {}, checks),
      el('td', { text: p.mean + ' / ' + p.p90 + (p.measured ? '' : ' (prior)') }),
      el('td', { class: 'slo-' + (r.slo === 'unknown' ? 'unmeasured' : r.slo), text: r.slo }),
      el('td', { text: (r.weight ?? '—') + ' / ' + (r.priority ?? '—') }),
      el('td', { text: r.placement || '—' })));
  }
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('signin-form').addEventListener('submit', ev => {
    ev.preventDefault();
    signIn(document.getElementById('admin-key').value.trim());
  });
  document.getElementById('audit-form').addEventListener('submit', ev => { ev.preventDefault(); loadAudit(); });
  document.getElementById('usage-form').addEventListener('submit', ev => { ev.preventDefault(); applyUsage(); });
  document.getElementById('explain-form').addEventListener('submit', ev => { ev.preventDefault(); explain(); });
  document.getElementById('signout').addEventListener('click', signOut);
  if (sessionStorage.getItem(KEY)) signIn(sessionStorage.getItem(KEY));
});
