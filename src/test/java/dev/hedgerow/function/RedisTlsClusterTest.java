package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TlsRedisCluster;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The app's Redis store ({@link HedgerowApp#redisStore}, as shipped) on a Redis Cluster that takes TLS, as ElastiCache
 * does with cluster mode and in-transit encryption: the client is given {@code rediss://} seeds, learns the nodes from
 * {@code CLUSTER SLOTS} (asked over TLS, it names the nodes' TLS ports and the hostname they announce) and reaches
 * each by that name, checking that the certificate names it. Nodes that announce only their IP, which their
 * certificate does not name, are refused while the hostname check is on, and reached once it is off.
 * The single-node case is {@link RedisTlsTest}.
 */
class RedisTlsClusterTest {
    static final Duration WAIT = Duration.ofSeconds(10);

    static TlsRedisCluster cluster;
    static Vertx vertx;

    @BeforeAll
    static void start() {
        cluster = TlsRedisCluster.start(true);
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() {
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    static ResilientStateStore store(TlsRedisCluster c, boolean verifyHost) {
        return HedgerowApp.redisStore(vertx, String.join(",", c.urls()), true,
                new HedgerowApp.RedisTls(Optional.of(c.caFile()), verifyHost));
    }

    /**
     * The first call connects to a seed, asks CLUSTER SLOTS and connects to every node, each with a TLS handshake: on
     * a cold JVM that took 0.7 to 1.1 s, over the store's 1 s guard, so the first ping may time out (and count as a
     * fallback); this waits for one that answers.
     */
    static void awaitUp(ResilientStateStore store) {
        eventually(() -> store.ping().await().atMost(WAIT), "a ping over TLS answered: " + store.lastFailure());
    }

    /** The node (plain port, for checks) that holds {@code key}: the others answer MOVED. */
    static RedisServer owner(TlsRedisCluster c, String key, String expected) throws IOException {
        RedisServer owner = null;
        for (RedisServer n : c.nodes()) {
            String value;
            try {
                value = Resp.command(n.port(), "GET", key);
            } catch (IOException e) {
                assertTrue(e.getMessage().contains("MOVED"), e.getMessage());
                continue;
            }
            assertEquals(expected, value, key + " on node " + n.port());
            owner = n;
        }
        assertTrue(owner != null, "no node holds " + key);
        return owner;
    }

    static long connectionsReceived(RedisServer node) throws IOException {
        String stats = Resp.command(node.port(), "INFO", "stats");
        return stats.lines().filter(l -> l.startsWith("total_connections_received:"))
                .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(':') + 1).trim())).findFirst().orElseThrow();
    }

    /**
     * The app's startup warm-up ({@link ResilientStateStore#warmUp}, outside the guard) opens a TLS connection to
     * every node, not only the one a ping goes to, so the first guarded call to any node finds its connection open.
     * Each node counts the connections it accepted (its own check's connection among them: one more than that).
     */
    @Test
    void theWarmUpConnectsToEveryNodeOverTls() throws Exception {
        ResilientStateStore store = store(cluster, true);
        List<Long> before = new ArrayList<>();
        for (RedisServer n : cluster.nodes()) {
            before.add(connectionsReceived(n));
        }
        assertEquals("", store.warmUp(WAIT).await().atMost(WAIT), "the warm-up's ping answered");
        for (int i = 0; i < 3; i++) {
            RedisServer n = cluster.nodes().get(i);
            long accepted = connectionsReceived(n) - before.get(i) - 1;
            assertTrue(accepted >= 1, "node " + n.port() + " accepted " + accepted + " connection(s) from the warm-up");
        }
        for (int i = 0; i < 12; i++) {
            store.putOrgBlob("warm-org-" + i, "probe", "v", null).await().atMost(WAIT);
        }
        assertEquals(0, store.fallbacks(), store.lastFailure());
    }

    @Test
    void clusterSlotsAskedOverTlsNameTheTlsPortsByHostname() {
        for (int i = 0; i < 3; i++) {
            List<String> lines = cluster.clusterSlotsOverTls(i).lines().map(String::trim).toList();
            assertEquals(3, lines.stream().filter("localhost"::equals).count(), String.join("\n", lines));
            for (int p : cluster.tlsPorts()) {
                assertTrue(lines.contains(Integer.toString(p)), "TLS port " + p + " in\n" + String.join("\n", lines));
            }
            for (RedisServer n : cluster.nodes()) {
                assertFalse(lines.contains(Integer.toString(n.port())), "plain port " + n.port());
            }
        }
    }

    /** Writes to keys of many slots land on all three nodes, over TLS, and read back, with no fallback. */
    @Test
    void stateIsSharedAcrossTheClusterOverTls() throws Exception {
        ResilientStateStore store = store(cluster, true);
        awaitUp(store);
        long fallbacks = store.fallbacks();
        List<String> orgs = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            orgs.add("tls-org-" + i);
        }
        for (String org : orgs) {
            store.putOrgBlob(org, "probe", "v-" + org, null).await().atMost(WAIT);
            store.putRouteBlob(org + "/route", "capacity", "c-" + org, null).await().atMost(WAIT);
            store.recordFailure(org + "/route", 5, Duration.ofMinutes(1)).await().atMost(WAIT); // a Lua script
        }
        for (String org : orgs) {
            assertEquals(Optional.of("v-" + org), store.getOrgBlob(org, "probe").await().atMost(WAIT));
        }
        assertEquals(fallbacks, store.fallbacks(), store.lastFailure());
        assertFalse(store.degraded(), store.lastFailure());

        Set<Integer> holders = new HashSet<>();
        for (String org : orgs) {
            holders.add(owner(cluster, StateKeys.orgBlob(org, "probe"), "v-" + org).port());
            holders.add(owner(cluster, StateKeys.routeBlob(org + "/route", "capacity"), "c-" + org).port());
            holders.add(owner(cluster, StateKeys.fails(org + "/route"), "1").port());
        }
        assertEquals(3, holders.size(), "the keys are spread over all three nodes: " + holders);
    }

    /**
     * A slot that moves to another node after the client learned the cluster (as a reshard or failover does): the
     * client follows the old owner's MOVED, which names the new one by hostname and TLS port, or relearns the
     * slots, and the write lands on the new owner over TLS.
     */
    @Test
    void aSlotMovedToAnotherNodeIsFollowedOverTls() throws Exception {
        ResilientStateStore store = store(cluster, true);
        awaitUp(store);
        String key = StateKeys.orgBlob("moved-org", "probe");
        store.putOrgBlob("moved-org", "probe", "before", null).await().atMost(WAIT);
        RedisServer from = owner(cluster, key, "before");
        RedisServer to = cluster.nodes().get((cluster.nodes().indexOf(from) + 1) % 3);
        String slot = Resp.command(from.port(), "CLUSTER", "KEYSLOT", key);
        String toId = Resp.command(to.port(), "CLUSTER", "MYID");
        Resp.command(from.port(), "DEL", key); // only an empty slot may be given away like this
        Resp.command(to.port(), "CLUSTER", "SETSLOT", slot, "NODE", toId);
        Resp.command(to.port(), "CLUSTER", "BUMPEPOCH");
        for (RedisServer n : cluster.nodes()) {
            if (n != to) {
                Resp.command(n.port(), "CLUSTER", "SETSLOT", slot, "NODE", toId);
            }
        }
        long fallbacks = store.fallbacks();
        store.putOrgBlob("moved-org", "probe", "after", null).await().atMost(WAIT);
        assertEquals(fallbacks, store.fallbacks(), store.lastFailure());
        assertEquals(to, owner(cluster, key, "after"));
    }

    /**
     * Nodes announcing only their IP: the seeds (by the name localhost) answer, but every node CLUSTER SLOTS names
     * is 127.0.0.1, which the certificate does not name, so with the hostname check on the client connects to none
     * and the store serves on local state; with the check off it works.
     */
    @Test
    void nodesAnnouncingTheirIpAreRefusedWhileTheHostnameIsChecked() throws Exception {
        try (TlsRedisCluster byIp = TlsRedisCluster.start(false)) {
            List<String> slots = byIp.clusterSlotsOverTls(0).lines().map(String::trim).toList();
            assertEquals(3, slots.stream().filter("127.0.0.1"::equals).count(), String.join("\n", slots));
            assertFalse(slots.contains("localhost"), String.join("\n", slots));

            ResilientStateStore checked = store(byIp, true);
            assertFalse(checked.ping().await().atMost(WAIT), "no node reachable by a name its certificate holds");
            // a write's failure keeps the client's reason (RedisTlsTest checks a ping's). The first attempt on a cold
            // JVM may time out instead (the store's 1 s guard): a second one is given
            for (int attempt = 0; attempt < 2 && !checked.lastFailure().contains("No subject alternative"); attempt++) {
                long fallbacks = checked.fallbacks();
                checked.putOrgBlob("ip-org", "probe", "checked", null).await().atMost(WAIT);
                assertEquals(fallbacks + 1, checked.fallbacks(), "the write fell back to local state");
            }
            assertTrue(checked.lastFailure().contains("Failed to connect to all nodes of the cluster")
                    && checked.lastFailure().contains("No subject alternative names matching IP address 127.0.0.1"),
                    checked.lastFailure());
            for (RedisServer n : byIp.nodes()) {
                assertEquals("0", Resp.command(n.port(), "DBSIZE"), "nothing reached node " + n.port());
            }

            ResilientStateStore unchecked = store(byIp, false);
            awaitUp(unchecked);
            long before = unchecked.fallbacks();
            unchecked.putOrgBlob("ip-org", "probe", "unchecked", null).await().atMost(WAIT);
            assertEquals(before, unchecked.fallbacks(), unchecked.lastFailure());
            owner(byIp, StateKeys.orgBlob("ip-org", "probe"), "unchecked");
        }
    }
}
