package dev.hedgerow.state;

import dev.hedgerow.admin.AdminService;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TcpLink;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An admin edit made on an instance cut off from a Redis that keeps running (a network partition, not a restart):
 * the edit is answered from local state during the partition, and when the link is back it must reach Redis and
 * the rest of the fleet, not be reverted by the instance's next catalog refresh (it was, silently). Instance A talks
 * to Redis through a {@link TcpLink} the tests cut; instance B talks to it directly. Each test edits an org of its
 * own, and the edits are judged by where each instance's gateway sends chat traffic.
 */
class PartitionedEditTest {
    static final String YAML = """
            orgs:
            %s""".formatted(String.join("", org("one"), org("two"), org("three"), org("four"), org("five"),
            org("six"), org("seven"), org("eight")));
    /** Short breaker delay so the restored link is tried again quickly; one success closes the breaker. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 4, 0.5, Duration.ofMillis(200), 1);

    static RedisServer redis;
    static Vertx vertx;
    static TcpLink link;
    static Map<String, SimServer> sims;
    static final List<RedisStores.Opened> clients = new ArrayList<>();
    static ResilientStateStore storeA;
    static ResilientStateStore storeB;
    static GatewayHarness a;
    static GatewayHarness b;
    static final HttpClient http = HttpClient.newHttpClient();

    static String org(String id) {
        return """
                  - id: %1$s
                    keys: [{ name: app, key: "k-%1$s" }]
                    providers:
                      - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                      - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                    routes:
                      - { alias: chat, provider: alpha, model: alpha-model }
                      - { alias: chat, provider: beta, model: beta-model }
                    groups:
                      chat: { strategy: rr_health }
                """.formatted(id);
    }

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        link = TcpLink.to(vertx, redis.port());
        ModelScript fast = ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.of(2, 0));
        sims = GatewayHarness.startSims(vertx, Map.of(
                "alpha", SimConfig.of(3).withApiKey("sk-alpha").withModel("alpha-model", fast),
                "beta", SimConfig.of(3).withApiKey("sk-beta").withModel("beta-model", fast)));
        storeA = resilient(link.redisUrl());
        storeB = resilient(redis.url());
        a = GatewayHarness.start(vertx, YAML, sims, storeA);
        b = GatewayHarness.start(vertx, YAML, sims, storeB);
    }

    static ResilientStateStore resilient(String url) {
        RedisStores.Opened shared = RedisStores.open(vertx, url);
        clients.add(shared);
        return new ResilientStateStore(shared.store(), new MemoryStateStore(Ticker.system()), SETTINGS);
    }

    @AfterAll
    static void stop() {
        a.close();
        b.close();
        clients.forEach(RedisStores.Opened::close);
        sims.values().forEach(SimServer::close);
        link.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    @AfterEach
    void linkBack() {
        link.restore();
        link.release();
        eventually(() -> {
            served(a, "one", 1);
            return !storeA.degraded();
        }, "instance A is back on shared state");
    }

    /** The routes that answered {@code n} chat requests of {@code orgId} on one instance. */
    static Set<String> served(GatewayHarness gw, String orgId, int n) {
        Set<String> routes = new TreeSet<>();
        for (int i = 0; i < n; i++) {
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                                URI.create(gw.baseUrl() + "/v1/chat/completions"))
                        .header("Authorization", "Bearer k-" + orgId).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"chat\",\"messages\":[{\"role\":"
                                + "\"user\",\"content\":\"partition " + i + "\"}]}")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body());
                routes.add(r.headers().firstValue("x-hedgerow-route").orElseThrow());
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
        return routes;
    }

    static Org org(GatewayHarness gw, String id) {
        return gw.core().catalog().current().org(id).orElseThrow();
    }

    static void drain(GatewayHarness gw, String orgId, String routeId) {
        new AdminService(gw.core()).drain(org(gw, orgId), routeId, true, "ops").await().atMost(Duration.ofSeconds(10));
    }

    static void editGroup(GatewayHarness gw, String orgId, String alias, String json) throws IOException {
        new AdminService(gw.core()).editGroup(org(gw, orgId), alias, Json.parse(json), null, "ops")
                .await().atMost(Duration.ofSeconds(10));
    }

    static void standing(GatewayHarness gw, String orgId, String routeId, String standing) {
        new AdminService(gw.core()).standing(org(gw, orgId), routeId, standing, "ops")
                .await().atMost(Duration.ofSeconds(10));
    }

    static String storedStanding(String orgId, String routeId) {
        try {
            return Resp.command(redis.port(), "GET", StateKeys.routeBlob(orgId + "/" + routeId, RouteFlags.STANDING));
        } catch (IOException e) {
            return "unreadable: " + e;
        }
    }

    /** Cuts A off Redis and sends it traffic until its store answers from local state. */
    static void partitionA() {
        link.cut();
        eventually(() -> {
            served(a, "one", 1);
            return storeA.degraded();
        }, "instance A serves on local state");
    }

    @Test
    void anEditMadeWhilePartitionedReachesTheFleetWhenTheLinkIsBack() {
        long lostBefore = storeA.lostEdits();
        partitionA();
        drain(a, "one", "chat-beta");
        assertEquals(Set.of("chat-alpha"), served(a, "one", 4), "in effect on A at once");
        assertEquals(1, storeA.pendingEdits());

        link.restore();
        eventually(() -> Set.of("chat-alpha").equals(served(b, "one", 4)), "B drains chat-beta too");
        eventually(() -> storeA.pendingEdits() == 0, "A's edit is written to Redis");
        assertEquals(Set.of("chat-alpha"), served(a, "one", 4), "A's own refresh did not revert it");
        assertEquals(lostBefore, storeA.lostEdits());
    }

    @Test
    void survivesARedisThatRestartedEmptyAndWasReseededByAnotherInstance() throws IOException {
        long lostBefore = storeA.lostEdits();
        partitionA();
        drain(a, "two", "chat-beta");
        Resp.command(redis.port(), "FLUSHALL"); // as a restart without persistence leaves it
        eventually(() -> {
            try {
                return Resp.command(redis.port(), "SMEMBERS", StateKeys.ORGS).contains("two");
            } catch (IOException e) {
                return false;
            }
        }, "B re-seeds the orgs from its mirror, without A's edit");
        assertEquals(Set.of("chat-alpha", "chat-beta"), served(b, "two", 4), "precondition: B has not seen it");

        link.restore();
        eventually(() -> Set.of("chat-alpha").equals(served(b, "two", 4)), "A's edit reaches B");
        assertEquals(Set.of("chat-alpha"), served(a, "two", 4));
        assertEquals(lostBefore, storeA.lostEdits());
    }

    @Test
    void anEditStoredElsewhereMeanwhileWinsAndTheLostOneIsCounted() {
        partitionA();
        drain(a, "three", "chat-beta");
        drain(b, "three", "chat-alpha"); // made on Redis while A cannot see it
        long lostBefore = storeA.lostEdits();

        link.restore();
        eventually(() -> Set.of("chat-beta").equals(served(a, "three", 4)), "A takes the edit Redis holds");
        assertEquals(Set.of("chat-beta"), served(b, "three", 4), "B keeps its edit");
        assertEquals(lostBefore + 1, storeA.lostEdits(), "A's conflicting edit is reported lost, not silently");
        assertEquals(0, storeA.pendingEdits());
        // and the org's audit log says so, where A's drain stood as done (found by hunt14)
        eventually(() -> storeB.readAudit("three", 20).await().atMost(Duration.ofSeconds(5)).stream()
                .anyMatch(e -> "edit_dropped".equals(e.fields().get("action"))), "the audit log records the drop");
    }

    /**
     * Redis stalls for A (what A sends reaches it only when the stall ends): A's first edit of an org times out, so
     * it is kept locally, yet its write lands when the stall ends; a second edit of the org is made locally
     * meanwhile. When Redis answers, the org it holds is A's own first edit, not another instance's: A's second edit
     * is written over it. It was dropped as lost to an edit "made elsewhere", and the first edit stood alone (the
     * drain was silently undone on every instance).
     */
    @Test
    void anEditWhoseTimedOutWriteLandedAfterAllIsNotTakenForAnotherInstancesEdit() throws IOException {
        long lostBefore = storeA.lostEdits();
        link.hold();
        editGroup(a, "four", "chat", "{\"retries\":1}");
        drain(a, "four", "chat-beta");
        assertEquals(Set.of("chat-alpha"), served(a, "four", 4), "in effect on A at once");
        assertEquals(1, storeA.pendingEdits(), "precondition: both edits wait for Redis");

        link.release(); // the stall ends: the first edit's write lands
        eventually(() -> storeA.pendingEdits() == 0 && !storeA.degraded(), "A's edits are written to Redis");
        eventually(() -> Set.of("chat-alpha").equals(served(b, "four", 4)), "B drains chat-beta too");
        assertEquals(Set.of("chat-alpha"), served(a, "four", 4), "A kept its drain");
        assertEquals(2, org(b, "four").groups().get("chat").retry().maxAttempts(), "and its first edit (retries: 1)");
        assertEquals(lostBefore, storeA.lostEdits(), "no edit was lost: there was no other");
    }

    /** As above, but another instance edits the org while Redis stalls for A: that edit holds, A's are lost. */
    @Test
    void anotherInstancesEditStillWinsOverEditsWhoseWritesTimedOut() throws IOException {
        link.hold();
        editGroup(a, "five", "chat", "{\"retries\":1}");
        drain(a, "five", "chat-beta");
        drain(b, "five", "chat-alpha"); // stored first: A's held first write no longer matches the stored version
        long lostBefore = storeA.lostEdits();

        link.release();
        eventually(() -> Set.of("chat-beta").equals(served(a, "five", 4)), "A takes the edit Redis holds");
        assertEquals(Set.of("chat-beta"), served(b, "five", 4), "B keeps its edit");
        assertEquals(3, org(a, "five").groups().get("chat").retry().maxAttempts(), "A's first edit did not land");
        assertEquals(lostBefore + 1, storeA.lostEdits(), "A's conflicting edits are reported lost, not silently");
        assertEquals(0, storeA.pendingEdits());
    }

    /**
     * Redis restarts without its data after B drained a route that A, cut off, never saw, and B writes its copy back.
     * A, back on the link, still holds the org at the version it had before; the copy was written back at version 1,
     * the version A held, so A never reloaded it and the fleet stayed split with nothing reporting it (found by
     * hunt7). A re-created org takes a version no instance holds: A takes B's drain.
     */
    @Test
    void anOrgWrittenBackAfterARestartIsTakenByAnInstanceHoldingItsOldVersion() throws IOException {
        long lostBefore = storeA.lostEdits();
        partitionA();
        drain(b, "six", "chat-beta");
        Resp.command(redis.port(), "FLUSHALL"); // as a restart without persistence leaves it
        eventually(() -> {
            try {
                return Resp.command(redis.port(), "SMEMBERS", StateKeys.ORGS).contains("six");
            } catch (IOException e) {
                return false;
            }
        }, "B writes its copy back, with its drain");
        assertEquals(Set.of("chat-alpha", "chat-beta"), served(a, "six", 4), "precondition: A has not seen it");

        link.restore();
        eventually(() -> Set.of("chat-alpha").equals(served(a, "six", 4)), "A takes B's drain");
        assertEquals(Set.of("chat-alpha"), served(b, "six", 4));
        assertEquals(lostBefore, storeA.lostEdits());
    }

    /**
     * A flag set while partitioned is not written over one set later through another instance: that one holds, and
     * the dropped one is counted and audited. It was written over it when the link came back ("the last set wins" was
     * false; found by hunt14): the route stayed suspended fleet-wide after an operator had put it back in service.
     */
    @Test
    void aFlagSetWhilePartitionedDoesNotOverwriteOneSetLaterElsewhere() {
        partitionA();
        standing(a, "seven", "chat-beta", "suspended");
        assertEquals(Set.of("chat-alpha"), served(a, "seven", 4), "in effect on A at once");
        standing(b, "seven", "chat-beta", "good"); // later, on Redis, while A cannot see it
        long lostBefore = storeA.lostEdits();

        link.restore();
        eventually(() -> storeA.pendingEdits() == 0 && !storeA.degraded(), "A's flag is judged against Redis");
        eventually(() -> Set.of("chat-alpha", "chat-beta").equals(served(a, "seven", 4)), "A takes the later flag");
        assertEquals(Set.of("chat-alpha", "chat-beta"), served(b, "seven", 4), "B keeps it");
        assertEquals("good", storedStanding("seven", "chat-beta"));
        assertEquals(lostBefore + 1, storeA.lostEdits(), "A's earlier flag is reported lost, not silently");
        eventually(() -> storeB.readAudit("seven", 20).await().atMost(Duration.ofSeconds(5)).stream()
                .anyMatch(e -> "edit_dropped".equals(e.fields().get("action"))
                        && "chat-beta".equals(e.fields().get("route"))), "the audit log records the drop");
    }

    /**
     * After Redis loses its data, the flag the fleet ends with is the latest one any instance saw, not whichever an
     * instance wrote back first: A saw chat-beta suspended and never read it again; the operator put it back in
     * service through B; Redis lost everything; A wrote back 'suspended' on its next request, and B, which had set
     * 'good', took A's older flag and routed around chat-beta for good (found by hunt14). B now writes its later flag
     * over A's older one, and A takes it.
     */
    @Test
    void afterADataLossTheLatestFlagAnInstanceSawIsTheOneWrittenBack() throws IOException {
        standing(a, "eight", "chat-beta", "suspended");
        assertEquals(Set.of("chat-alpha"), served(b, "eight", 4), "B sees it");
        standing(b, "eight", "chat-beta", "good");
        Resp.command(redis.port(), "FLUSHALL"); // as a restart without persistence leaves it

        served(a, "eight", 1); // A reads the route first: it writes back the flag it last saw, 'suspended'
        eventually(() -> "suspended".equals(storedStanding("eight", "chat-beta")), "A wrote back its older flag");
        eventually(() -> Set.of("chat-alpha", "chat-beta").equals(served(b, "eight", 4)), "B keeps its later flag");
        eventually(() -> "good".equals(storedStanding("eight", "chat-beta")), "and writes it over A's");
        eventually(() -> Set.of("chat-alpha", "chat-beta").equals(served(a, "eight", 4)), "A takes it");
    }
}
