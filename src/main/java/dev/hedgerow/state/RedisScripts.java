package dev.hedgerow.state;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts behind {@link RedisStateStore}. Each one touches keys of a single hash tag (one cluster slot):
 * the declared KEYS, plus, for bucketed data and blobs, keys named from a declared prefix or read from a declared
 * index, which share that prefix's hash tag. Time inside a script is the server's {@code TIME}, never the caller's.
 * {@link MemoryStateStore} implements the same rules in Java; keep the two in step.
 */
final class RedisScripts {

    /** A script and its SHA-1, for EVALSHA with a fallback to EVAL on NOSCRIPT. */
    record LuaScript(String name, String text, String sha) {
        static LuaScript of(String name, String text) {
            try {
                byte[] digest = MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
                return new LuaScript(name, text, HexFormat.of().formatHex(digest));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private RedisScripts() {
    }

    /** Server time in milliseconds, as a Lua number (exact: well below 2^53). */
    private static final String NOW = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            """;

    /**
     * {@code adminId()}: the id an operator's audit event takes, above the last of both the org's streams (KEYS[1]
     * and KEYS[2]; see {@link #APPEND_ADMIN_AUDIT}).
     */
    private static final String ADMIN_ID = """
            local function adminId()
              local t = redis.call('TIME')
              local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              local seq = 0
              for _, k in ipairs(KEYS) do
                local last = redis.call('XREVRANGE', k, '+', '-', 'COUNT', 1)
                if #last > 0 then
                  local lms, lseq = string.match(last[1][1], '^(%d+)-(%d+)$')
                  lms = tonumber(lms)
                  lseq = tonumber(lseq)
                  if lms > ms or (lms == ms and lseq >= seq) then
                    ms = lms
                    seq = lseq + 1
                  end
                end
              end
              return string.format('%.0f-%.0f', ms, seq)
            end
            """;

    /**
     * Kong-counted failure and, in the same script, the provider's Retry-After hold it brought (never shortening a
     * longer one), so no reader sees the count without the hold. KEYS: fails, lastfail, probe, cool, ra. ARGV:
     * maxFails, failTimeoutMs, failsTtlMs, holdMs (0 = no hold). Returns {fails, PTTL(cool), PTTL(ra)}.
     */
    static final LuaScript RECORD_FAILURE = LuaScript.of("recordFailure", """
            local fails = redis.call('INCR', KEYS[1])
            redis.call('PEXPIRE', KEYS[1], ARGV[3])
            redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
            redis.call('DEL', KEYS[3])
            if fails >= tonumber(ARGV[1]) then
              -- every failure at or past the threshold (a failed probe included) re-arms the full cooldown
              redis.call('SET', KEYS[4], '1', 'PX', ARGV[2])
            end
            local hold = tonumber(ARGV[4])
            if hold > 0 and redis.call('PTTL', KEYS[5]) < hold then
              redis.call('SET', KEYS[5], '1', 'PX', hold)
            end
            return {fails, redis.call('PTTL', KEYS[4]), redis.call('PTTL', KEYS[5])}
            """);

    /**
     * Kong success: the counter resets only if the last-failure marker has expired. KEYS: fails, lastfail, probe,
     * cool. Returns {fails, PTTL(cool)}.
     */
    static final LuaScript RECORD_SUCCESS = LuaScript.of("recordSuccess", """
            redis.call('DEL', KEYS[3])
            if redis.call('EXISTS', KEYS[2]) == 0 then
              redis.call('DEL', KEYS[1])
            end
            return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[4])}
            """);

    /**
     * Half-open probe slot, holding its owner's token. KEYS: cool, fails, probe. ARGV: maxFails, ttlMs, owner.
     * Returns 1 for the one winner.
     */
    static final LuaScript TRY_PROBE = LuaScript.of("tryAcquireProbe", """
            if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
            if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[1]) then return 0 end
            if redis.call('SET', KEYS[3], ARGV[3], 'NX', 'PX', ARGV[2]) then return 1 end
            return 0
            """);

    /**
     * Named route blobs plus their index (a hash name -> blob key, so the snapshot reads blobs without scanning), in
     * one call; the index lives as long as its longest blob. A learned blob ({@code StateStore.RouteBlob#learned})
     * is written only over the value its writer stepped from (none: only where none is held), and otherwise left for the
     * writer to step again from the value returned. KEYS: index, blob1 .. blobN (one slot: all carry the route's hash tag). ARGV: name1,
     * value1, ttlMs1 (0 = none), mode1 ({@code p} plain, {@code v} only over expected1, {@code n} only where none is),
     * expected1, ... Returns {name, held (nil: none), ...} of the learned blobs not written.
     */
    static final LuaScript PUT_ROUTE_BLOBS = LuaScript.of("putRouteBlobs", """
            local stale = {}
            for i = 2, #KEYS do
              local name = ARGV[5 * i - 9]
              local ttl = tonumber(ARGV[5 * i - 7])
              local mode = ARGV[5 * i - 6]
              local write = true
              if mode ~= 'p' then
                local held = redis.call('GET', KEYS[i])
                if (mode == 'n' and held) or (mode == 'v' and held ~= ARGV[5 * i - 5]) then
                  write = false
                  stale[#stale + 1] = name
                  stale[#stale + 1] = held
                end
              end
              if write then
                if ttl > 0 then
                  redis.call('SET', KEYS[i], ARGV[5 * i - 8], 'PX', ttl)
                else
                  redis.call('SET', KEYS[i], ARGV[5 * i - 8])
                end
                local existed = redis.call('EXISTS', KEYS[1])
                redis.call('HSET', KEYS[1], name, KEYS[i])
                if ttl == 0 then
                  redis.call('PERSIST', KEYS[1])
                elseif existed == 0 then
                  redis.call('PEXPIRE', KEYS[1], ttl)
                else
                  local cur = redis.call('PTTL', KEYS[1])
                  if cur >= 0 and cur < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
                end
              end
            end
            return stale
            """);

    /**
     * Writes an operator flag (no TTL) and its stamp (the server's clock in milliseconds, or one past the held stamp
     * when that is not earlier), both named in the route's blob index. KEYS: index, blob, stamp (the route's hash
     * tag). ARGV: name, value, the stamp's name. Returns the stamp.
     */
    static final LuaScript PUT_ROUTE_FLAG = LuaScript.of("putRouteFlag", """
            local t = redis.call('TIME')
            local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local held = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
            if held >= at then at = held + 1 end
            redis.call('SET', KEYS[2], ARGV[2])
            redis.call('SET', KEYS[3], string.format('%.0f', at))
            redis.call('HSET', KEYS[1], ARGV[1], KEYS[2], ARGV[3], KEYS[3])
            redis.call('PERSIST', KEYS[1])
            return at
            """);

    /**
     * Writes an operator flag (no TTL) set at a time, both named in the route's blob index, unless the route holds
     * another value of the flag stamped as late or later (none: 0); see {@code StateStore#restoreRouteFlag}. KEYS:
     * index, blob, stamp (the route's hash tag). ARGV: name, value, the stamp's name, the stamp, the age in ms (-1:
     * none; else the stamp is the server's clock less the age, and not below ARGV[4]). Returns the stamp the flag holds
     * afterwards, or -1 when another value holds.
     */
    static final LuaScript RESTORE_ROUTE_FLAG = LuaScript.of("restoreRouteFlag", """
            local stamp = tonumber(ARGV[4])
            local age = tonumber(ARGV[5])
            if age >= 0 then
              local t = redis.call('TIME')
              local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              if now - age > stamp then stamp = now - age end
            end
            local value = redis.call('GET', KEYS[2])
            if value then
              local held = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
              if held >= stamp then
                if value == ARGV[2] then return held end
                return -1
              end
            end
            redis.call('SET', KEYS[2], ARGV[2])
            redis.call('SET', KEYS[3], string.format('%.0f', stamp))
            redis.call('HSET', KEYS[1], ARGV[1], KEYS[2], ARGV[3], KEYS[3])
            redis.call('PERSIST', KEYS[1])
            return stamp
            """);

    /**
     * Appends an operator's audit event to its own stream with an id above the last of both the org's streams (the
     * server's time, or one past the newest id of either): the two streams are read as one, newest first by id, and a
     * stream's own {@code *} id only exceeds its own last, so an action taken in the millisecond of some request
     * events sorted before them, or shared one's id (found by a full-suite run of the store contract). KEYS: the
     * operators' stream, the requests' stream (one hash tag). ARGV: maxLen (approximate trim), then field, value, ...
     * Returns the id.
     */
    static final LuaScript APPEND_ADMIN_AUDIT = LuaScript.of("appendAdminAudit", ADMIN_ID + """
            local args = {KEYS[1], 'MAXLEN', '~', ARGV[1], adminId()}
            for i = 2, #ARGV do
              args[#args + 1] = ARGV[i]
            end
            return redis.call('XADD', unpack(args))
            """);

    /**
     * Appends an audit event unless its stream holds the same one (every field and value equal, in order) from the
     * given id on: then that entry's id (StateStore#appendAuditOnce; a replay after a call that may have landed).
     * Looks at 10,000 entries at most. KEYS: the event's stream, the org's other stream (one hash tag). ARGV: maxLen,
     * the id to look from ("-": the oldest), "1" for an operator's event (its id as {@link #APPEND_ADMIN_AUDIT}
     * gives it) or "0", then field, value, ... Returns the id.
     */
    static final LuaScript APPEND_AUDIT_ONCE = LuaScript.of("appendAuditOnce", ADMIN_ID + """
            local n = #ARGV - 3
            for _, e in ipairs(redis.call('XRANGE', KEYS[1], ARGV[2], '+', 'COUNT', 10000)) do
              local f = e[2]
              if #f == n then
                local same = true
                for i = 1, n do
                  if f[i] ~= ARGV[i + 3] then
                    same = false
                    break
                  end
                end
                if same then
                  return e[1]
                end
              end
            end
            local args = {KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[3] == '1' and adminId() or '*'}
            for i = 4, #ARGV do
              args[#args + 1] = ARGV[i]
            end
            return redis.call('XADD', unpack(args))
            """);

    /**
     * Adds or renews a lease: a sorted set leaseId -> expiry (server ms), cleaned of dead leases on every touch;
     * the key itself dies with its longest lease. KEYS: leases. ARGV: leaseId, ttlMs.
     */
    static final LuaScript PUT_LEASE = LuaScript.of("putLease", NOW + """
            redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
            redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
            local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
            redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - now))
            return 1
            """);

    /**
     * Adds usage to the current bucket {@code <prefix>:<now / bucketMs>}. KEYS: usage prefix.
     * ARGV: prompt, completion, cost, bucketMs, ttlMs.
     */
    static final LuaScript ADD_USAGE = LuaScript.of("addUsage", NOW + """
            local k = KEYS[1] .. ':' .. string.format('%d', math.floor(now / tonumber(ARGV[4])))
            redis.call('HINCRBY', k, 'p', ARGV[1])
            redis.call('HINCRBY', k, 'c', ARGV[2])
            redis.call('HINCRBYFLOAT', k, 'cost', ARGV[3])
            redis.call('PEXPIRE', k, ARGV[5])
            return 1
            """);

    /**
     * Everything ranking needs about one route. KEYS: cool, fails, probe, ra, leases, usage prefix, blob index.
     * ARGV: bucketMs, bucketCount. Returns {PTTL cool, fails, probe, PTTL ra, inflight, prompt, completion,
     * cost (string), name1, value1, ...}. Dead leases and names of expired blobs are removed on the way.
     */
    static final LuaScript SNAPSHOT = LuaScript.of("snapshot", NOW + """
            local cool = redis.call('PTTL', KEYS[1])
            local fails = tonumber(redis.call('GET', KEYS[2]) or '0')
            local probe = redis.call('EXISTS', KEYS[3])
            local ra = redis.call('PTTL', KEYS[4])
            redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
            local inflight = redis.call('ZCARD', KEYS[5])
            local width = tonumber(ARGV[1])
            local b = math.floor(now / width)
            local p, c, cost = 0, 0, 0
            for i = b - tonumber(ARGV[2]) + 1, b do
              local v = redis.call('HMGET', KEYS[6] .. ':' .. string.format('%d', i), 'p', 'c', 'cost')
              p = p + tonumber(v[1] or '0')
              c = c + tonumber(v[2] or '0')
              cost = cost + tonumber(v[3] or '0')
            end
            local out = {cool, fails, probe, ra, inflight, p, c, tostring(cost)}
            local idx = redis.call('HGETALL', KEYS[7])
            for i = 1, #idx, 2 do
              local v = redis.call('GET', idx[i + 1])
              if v then
                out[#out + 1] = idx[i]
                out[#out + 1] = v
              else
                redis.call('HDEL', KEYS[7], idx[i])
              end
            end
            return out
            """);

    /**
     * Advances a rotation cursor by n, returns its new value, keeps it alive while used. KEYS: cursor.
     * ARGV: idleTtlMs, n.
     */
    static final LuaScript NEXT_CURSOR = LuaScript.of("nextCursor", """
            local v = redis.call('INCRBY', KEYS[1], tonumber(ARGV[2]))
            redis.call('PEXPIRE', KEYS[1], ARGV[1])
            return v
            """);

    /**
     * Adds n to a count of the current hedge bucket: requests ('r', n &gt; 0) or hedges ('h', -1: a refund).
     * KEYS: hedge prefix. ARGV: bucketMs, ttlMs, n, field.
     */
    static final LuaScript HEDGE_COUNT = LuaScript.of("countRequest", NOW + """
            local k = KEYS[1] .. ':' .. string.format('%d', math.floor(now / tonumber(ARGV[1])))
            redis.call('HINCRBY', k, ARGV[4], tonumber(ARGV[3]))
            redis.call('PEXPIRE', k, ARGV[2])
            return 1
            """);

    /**
     * Gives back a hedge spent and not started: from the current bucket when it holds a hedge, else from the one
     * before (the refund crossed a bucket's end; taken from the new one, the spend's bucket left the window first and
     * the -1 stayed, one hedge more allowed: found by hunt21), else nowhere.
     * KEYS: hedge prefix. ARGV: bucketMs.
     */
    static final LuaScript HEDGE_REFUND = LuaScript.of("refundHedge", NOW + """
            local b = math.floor(now / tonumber(ARGV[1]))
            for i = b, b - 1, -1 do
              local k = KEYS[1] .. ':' .. string.format('%d', i)
              if tonumber(redis.call('HGET', k, 'h') or '0') > 0 then
                redis.call('HINCRBY', k, 'h', -1)
                return 1
              end
            end
            return 0
            """);

    /**
     * Checks, and optionally spends, the hedge budget in one step (retry budget in the manner of Finagle):
     * allowed while hedges in window &lt; max(min, ratio x requests in window).
     * KEYS: hedge prefix. ARGV: spend (0/1), ratio, min, bucketMs, bucketCount, ttlMs. Returns 1 when allowed.
     */
    static final LuaScript HEDGE_BUDGET = LuaScript.of("hedgeBudget", NOW + """
            local width = tonumber(ARGV[4])
            local b = math.floor(now / width)
            local r, h = 0, 0
            for i = b - tonumber(ARGV[5]) + 1, b do
              local v = redis.call('HMGET', KEYS[1] .. ':' .. string.format('%d', i), 'r', 'h')
              r = r + tonumber(v[1] or '0')
              h = h + tonumber(v[2] or '0')
            end
            if h >= math.max(tonumber(ARGV[3]), tonumber(ARGV[2]) * r) then return 0 end
            if ARGV[1] == '1' then
              local k = KEYS[1] .. ':' .. string.format('%d', b)
              redis.call('HINCRBY', k, 'h', 1)
              redis.call('PEXPIRE', k, ARGV[6])
            end
            return 1
            """);

    /**
     * Catalog compare-and-set. KEYS: catalog hash, version. ARGV: expected, json, source, hasSource (1/0), the
     * file's revision (0: none, and no field), the org's own source hash ("": none, and no field), the version a
     * written-back org had before the store lost it (0: not a write-back, and no field). Returns the new
     * version, or -1 when the stored version is not the expected one. A first write takes the server's clock in
     * milliseconds as its version (see {@link StateStore#putOrgCatalog}).
     */
    static final LuaScript CATALOG_CAS = LuaScript.of("putOrgCatalog", """
            local v = tonumber(redis.call('GET', KEYS[2]) or '0')
            if v ~= tonumber(ARGV[1]) then return -1 end
            local nv = v + 1
            if v == 0 then
              local t = redis.call('TIME')
              nv = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            end
            redis.call('HSET', KEYS[1], 'json', ARGV[2], 'version', nv)
            if ARGV[4] == '1' then
              redis.call('HSET', KEYS[1], 'source', ARGV[3])
            else
              redis.call('HDEL', KEYS[1], 'source')
            end
            if ARGV[5] ~= '0' then
              redis.call('HSET', KEYS[1], 'revision', ARGV[5])
            else
              redis.call('HDEL', KEYS[1], 'revision')
            end
            if ARGV[6] ~= '' then
              redis.call('HSET', KEYS[1], 'org_source', ARGV[6])
            else
              redis.call('HDEL', KEYS[1], 'org_source')
            end
            if ARGV[7] ~= '0' then
              redis.call('HSET', KEYS[1], 'restored_from', ARGV[7])
            else
              redis.call('HDEL', KEYS[1], 'restored_from')
            end
            redis.call('SET', KEYS[2], nv)
            return nv
            """);

    /**
     * Adds to one day of the org ledger and sets when that day expires; with a writer, once per write number (see
     * {@code StateStore.addLedgerOnce}). KEYS: the day's ledger, the day's writer marks. ARGV: alias, requests,
     * prompt, completion, cost, expiry (unix seconds), writer mark field ("" = add unconditionally), write number,
     * how long the marks are kept (seconds). Returns 1 if added, 0 if the write had been applied before.
     */
    static final LuaScript ADD_LEDGER = LuaScript.of("addLedger", """
            if ARGV[7] ~= '' then
              local last = redis.call('HGET', KEYS[2], ARGV[7])
              if last and tonumber(ARGV[8]) <= tonumber(last) then
                return 0
              end
              redis.call('HSET', KEYS[2], ARGV[7], ARGV[8])
              redis.call('EXPIRE', KEYS[2], ARGV[9])
            end
            redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':n', ARGV[2])
            redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':p', ARGV[3])
            redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':c', ARGV[4])
            redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1] .. ':cost', ARGV[5])
            redis.call('EXPIREAT', KEYS[1], ARGV[6])
            return 1
            """);

    /** Every field of each key, in one round trip. KEYS: hashes of one slot. */
    static final LuaScript HGETALL_EACH = LuaScript.of("hgetallEach", """
            local out = {}
            for i = 1, #KEYS do
              out[i] = redis.call('HGETALL', KEYS[i])
            end
            return out
            """);

    /**
     * Adds a route to the routes that recently served each prefix hash: per hash a sorted set routeId -> expiry
     * (server ms), cleaned of expired routes on every touch; the key dies with its last route. A plain string left
     * by an instance from before these sets (it held one route) is replaced. KEYS: affinity keys (one org).
     * ARGV: routeId, ttlMs (0 = none).
     */
    static final LuaScript PUT_AFFINITY = LuaScript.of("putAffinity", NOW + """
            local ttl = tonumber(ARGV[2])
            for i = 1, #KEYS do
              if redis.call('TYPE', KEYS[i]).ok ~= 'zset' then
                redis.call('DEL', KEYS[i])
              end
              redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
              if ttl > 0 then
                redis.call('ZADD', KEYS[i], now + ttl, ARGV[1])
                local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
                if last[2] ~= 'inf' then
                  redis.call('PEXPIRE', KEYS[i], math.max(1, tonumber(last[2]) - now))
                end
              else
                redis.call('ZADD', KEYS[i], '+inf', ARGV[1])
                redis.call('PERSIST', KEYS[i])
              end
            end
            return 1
            """);

    /**
     * The routes that served each prefix hash and have not expired, latest expiry first. A plain string (one route,
     * written by an instance from before these sets) counts as that route. KEYS: affinity keys (one org).
     * Returns one array of route ids per key.
     */
    static final LuaScript AFFINITY = LuaScript.of("affinity", NOW + """
            local out = {}
            for i = 1, #KEYS do
              local kind = redis.call('TYPE', KEYS[i]).ok
              if kind == 'zset' then
                out[i] = redis.call('ZREVRANGEBYSCORE', KEYS[i], '+inf', '(' .. string.format('%d', now))
              elseif kind == 'string' then
                out[i] = {redis.call('GET', KEYS[i])}
              else
                out[i] = {}
              end
            end
            return out
            """);

    /**
     * Deletes a key only while it holds the owner's token (a lock, a probe slot): never frees one that expired
     * and was taken by someone else. KEYS: the key. ARGV: owner.
     */
    static final LuaScript DELETE_IF_OWNER = LuaScript.of("deleteIfOwner", """
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0
            """);

    /** Compare-and-extend of an owned key. KEYS: key. ARGV: owner, ttlMs. */
    static final LuaScript PEXPIRE_IF_OWNER = LuaScript.of("pexpireIfOwner", """
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('PEXPIRE', KEYS[1], ARGV[2])
            end
            return 0
            """);
}
