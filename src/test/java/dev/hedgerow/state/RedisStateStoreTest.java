package dev.hedgerow.state;

import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import io.vertx.mutiny.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The contract on a private standalone redis-server (real TTLs, real server time). */
class RedisStateStoreTest extends StateStoreContract {

    private static RedisServer server;
    private static Vertx vertx;
    private static Redis redis;
    private static RedisStateStore store;

    @BeforeAll
    static void startRedis() {
        server = RedisServer.start();
        vertx = Vertx.vertx();
        redis = Redis.createClient(vertx, new RedisOptions().setConnectionString(server.url())
                .setMaxPoolSize(8).setMaxPoolWaiting(256));
        store = new RedisStateStore(redis, RedisClientType.STANDALONE, TUNING);
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
        if (vertx != null) {
            vertx.closeAndAwait();
        }
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected StateStore store() {
        return store;
    }

    @Override
    protected void advance(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void scriptsAreReloadedWhenTheServerForgetsThem() throws Exception {
        String r = id("route");
        await(store.recordFailure(r, 5, LONG));
        Resp.command(server.port(), "SCRIPT", "FLUSH");
        assertEquals(2, await(store.recordFailure(r, 5, LONG)).fails());
        Resp.command(server.port(), "SCRIPT", "FLUSH");
        assertEquals(2, await(store.snapshot(List.of(r, id("route")), LONG)).get(r).fails());
    }

    /**
     * A failure and its provider's hold are one script call: between the call and a marker sent after it, the server
     * ran one command on the route's keys, an EVALSHA naming both the failure counter and the hold, whose script
     * counted the failure and set the hold. Two calls (as the count and the hold once were) would leave a moment when
     * another instance's snapshot sees the failure without the hold.
     */
    @Test
    void aFailureWithAHoldIsOneScriptCallWritingBothKeys() throws Exception {
        await(store.recordFailure(id("route"), 5, LONG, LONG)); // loads the script: no NOSCRIPT retry below
        String r = id("route");
        List<String> commands;
        try (Resp.Monitor monitor = Resp.Monitor.open(server.port())) {
            await(store.recordFailure(r, 5, LONG, LONG));
            commands = monitor.commandsSoFar();
        }
        // MONITOR quotes each argument as sent: the client's command names in lower case, the script's as written
        String fails = '"' + StateKeys.fails(r) + '"';
        String hold = '"' + StateKeys.retryAfter(r) + '"';
        String tag = "{r:" + r + "}";
        List<String> calls = commands.stream().filter(l -> !l.contains("[0 lua]") && l.contains(tag)).toList();
        assertEquals(1, calls.size(), "one call on the route's keys: " + commands);
        assertTrue(calls.get(0).toUpperCase(Locale.ROOT).contains("\"EVALSHA\"") && calls.get(0).contains(fails)
                && calls.get(0).contains(hold), calls.get(0));
        assertTrue(commands.stream().anyMatch(l -> l.contains("[0 lua]") && l.contains("\"INCR\" " + fails)),
                "the script counted the failure: " + commands);
        assertTrue(commands.stream().anyMatch(l -> l.contains("[0 lua]") && l.contains("\"SET\" " + hold)),
                "the script set the hold: " + commands);
    }

    /**
     * A restored flag (an operator's verdict the store had lost) is kept for good, and so is the route's blob index,
     * which had the TTL of the blob written before it.
     */
    @Test
    void aRestoredFlagIsKeptForGoodWithItsNameInTheIndex() throws Exception {
        String r = id("route");
        String index = StateKeys.routeBlobIndex(r);
        await(store.putRouteBlob(r, "ewma", "e", LONG));
        assertTrue(Long.parseLong(Resp.command(server.port(), "PTTL", index)) > 0);

        assertEquals(Optional.of(7L), await(store.restoreRouteFlag(r, "standing", "suspended",
                StateStore.FlagTime.at(7))));

        assertEquals("-1", Resp.command(server.port(), "PTTL", StateKeys.routeBlob(r, "standing")));
        assertEquals("-1", Resp.command(server.port(), "PTTL", StateKeys.routeBlob(r, "standing@at")));
        assertEquals("-1", Resp.command(server.port(), "PTTL", index));
        assertEquals("1", Resp.command(server.port(), "HEXISTS", index, "standing"));
        assertEquals("1", Resp.command(server.port(), "HEXISTS", index, "standing@at"));

        String put = id("route");
        await(store.putRouteBlob(put, "ewma", "e", LONG));
        long at = await(store.putRouteFlag(put, "standing", "drained"));
        assertEquals(Long.toString(at), Resp.command(server.port(), "GET", StateKeys.routeBlob(put, "standing@at")));
        assertEquals("-1", Resp.command(server.port(), "PTTL", StateKeys.routeBlobIndex(put)));
        // the server runs on this host: its clock is this one
        assertTrue(Math.abs(at - System.currentTimeMillis()) < 60_000, "the server's clock in milliseconds: " + at);
    }

    /**
     * During a rolling upgrade an instance from before affinity sets wrote one route as a plain string: it is read
     * as that route, and the next write replaces it with a set, with the key's TTL that of its last route.
     */
    @Test
    void anAffinityStringFromAnOlderInstanceIsReadAndReplaced() throws Exception {
        String org = id("org");
        String key = StateKeys.affinity(org, "h1");
        Resp.command(server.port(), "SET", key, "route-old", "PX", "30000");
        assertEquals(Map.of("h1", List.of("route-old")), await(store.affinity(org, List.of("h1"))));

        await(store.putAffinity(org, List.of("h1"), "route-new", LONG));

        assertEquals("zset", Resp.command(server.port(), "TYPE", key));
        assertEquals(Map.of("h1", List.of("route-new")), await(store.affinity(org, List.of("h1"))));
        long pttl = Long.parseLong(Resp.command(server.port(), "PTTL", key));
        assertTrue(pttl > LONG.toMillis() - 5_000 && pttl <= LONG.toMillis(), "PTTL " + pttl);
    }

    /**
     * A learned write that finds Redis holding another value is counted and stepped from it; one that meets a new
     * value on every try (another writer always lands first) is dropped after {@value StateStore#LEARNED_TRIES} tries
     * and counted as dropped, leaving the other writer's value.
     */
    @Test
    void learnedWritesThatFindRedisChangedAreCountedAndOneThatNeverLandsIsDropped() throws Exception {
        String r = id("route");
        String key = StateKeys.routeBlob(r, "ttft");
        long conflicts = store.learnedConflicts();
        long dropped = store.learnedDropped();
        await(store.putRouteBlobs(r, List.of(learned("ttft", null, "a"))));
        await(store.putRouteBlobs(r, List.of(learned("ttft", null, "b"))));    // "a" held: stepped from it
        assertEquals("ab", Resp.command(server.port(), "GET", key));
        assertEquals(conflicts + 1, store.learnedConflicts());
        assertEquals(dropped, store.learnedDropped());

        java.util.concurrent.atomic.AtomicInteger others = new java.util.concurrent.atomic.AtomicInteger();
        java.util.function.UnaryOperator<String> raced = held -> {
            try {   // another writer's value lands while this step is being taken
                Resp.command(server.port(), "SET", key, "other" + others.incrementAndGet());
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return held + "z";
        };
        await(store.putRouteBlobs(r, List.of(new StateStore.RouteBlob("ttft", raced.apply("ab"), LONG, "ab", raced))));
        assertEquals(conflicts + 1 + StateStore.LEARNED_TRIES, store.learnedConflicts());
        assertEquals(dropped + 1, store.learnedDropped());
        assertEquals("other" + others.get(), Resp.command(server.port(), "GET", key));
    }

    /** A key of any other kind (nothing writes one; an operator's stray write could) holds no route and is replaced. */
    @Test
    void anAffinityKeyOfAnotherKindHoldsNoRouteAndIsReplaced() throws Exception {
        String org = id("org");
        String key = StateKeys.affinity(org, "h1");
        Resp.command(server.port(), "HSET", key, "route-x", "1");
        assertEquals(Map.of(), await(store.affinity(org, List.of("h1"))));

        await(store.putAffinity(org, List.of("h1"), "route-new", LONG));

        assertEquals("zset", Resp.command(server.port(), "TYPE", key));
        assertEquals(Map.of("h1", List.of("route-new")), await(store.affinity(org, List.of("h1"))));
    }

    /**
     * An operator's event gets an id above every event of the org's request stream, so the merged read shows it
     * newest: its own stream's {@code *} id knew only its own stream, and an action taken in the millisecond of a
     * burst of request events sorted behind them (a full-suite run of the contract's flood test caught it). A request
     * event with an id a minute ahead stands for that burst.
     */
    @Test
    void anOperatorsEventIsNewerThanEveryRequestEventBeforeIt() throws Exception {
        String org = id("org");
        long ahead = System.currentTimeMillis() + 60_000;
        Resp.command(server.port(), "XADD", StateKeys.audit(org), ahead + "-5", "type", "request", "n", "1");
        String drained = await(store.appendAudit(org, Map.of("type", "admin", "action", "drain"), 10));
        assertEquals(ahead + "-6", drained);
        assertEquals(List.of(drained, ahead + "-5"),
                await(store.readAudit(org, 2)).stream().map(AuditRecord::id).toList());
        String pinned = await(store.appendAudit(org, Map.of("type", "admin", "action", "pin"), 10));
        assertEquals(ahead + "-7", pinned, "above its own stream's last too");
    }

    @Test
    void pingFailsWhileRedisIsDownAndRecoversAfterRestart() {
        assertTrue(await(store.ping()));
        server.stop();
        try {
            assertFalse(await(store.ping()));
        } finally {
            server.restart();
        }
        boolean up = false;
        for (int i = 0; i < 50 && !up; i++) {
            up = await(store.ping());
            if (!up) {
                advance(Duration.ofMillis(100));
            }
        }
        assertTrue(up, "store reconnects after the restart");
    }

    /**
     * The refund script takes from the bucket before the current one when the current holds no hedge (the spend's,
     * a refund crossing a bucket's end), never leaving a negative count behind (found by hunt21).
     */
    @Test
    void aRefundTakesFromThePreviousBucketWhenTheCurrentHoldsNoHedge() throws Exception {
        String org = id("org");
        long windowMs = 60_000;
        long width = StateTuning.hedgeBucketMillis(windowMs);
        String[] time = Resp.command(server.port(), "TIME").split("\n");
        long now = Long.parseLong(time[0].trim()) * 1000 + Long.parseLong(time[1].trim()) / 1000;
        long bucket = now / width;
        if (now + 500 >= (bucket + 1) * width) {   // too near the bucket's end to be sure of it: wait it out
            Thread.sleep((bucket + 1) * width - now + 10);
            bucket++;
        }
        String prefix = StateKeys.hedgePrefix(org, windowMs);
        Resp.command(server.port(), "HSET", prefix + ":" + (bucket - 1), "h", "1");
        await(store.refundHedge(org, Duration.ofMillis(windowMs)));
        assertEquals("0", Resp.command(server.port(), "HGET", prefix + ":" + (bucket - 1), "h"));
        assertEquals(null, Resp.command(server.port(), "HGET", prefix + ":" + bucket, "h"), "no -1 left behind");
        await(store.refundHedge(org, Duration.ofMillis(windowMs)));
        assertEquals("0", Resp.command(server.port(), "HGET", prefix + ":" + (bucket - 1), "h"), "no hedge: nothing");
    }
}
