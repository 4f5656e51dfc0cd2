package dev.hedgerow.function.gateway;

import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.CatalogService;
import dev.hedgerow.catalog.CatalogService.FileStatus;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.LogCapture;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.TcpLink;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A configuration file's {@code revision} orders files, so that a rolling or canary deploy, whose old and new
 * instances cold-start in turn on one Redis, cannot flip the fleet back to the old file: an instance started from an
 * older file serves the stored, newer catalog (orgs the new file added keep authenticating everywhere), a changed
 * file under the published revision is refused, and a rollback is the old text under a higher revision. Files without
 * a revision keep the old rule (the last one started wins). Over HTTP, gateway instances on a private Redis through
 * the production outage guard ({@link HedgerowApp#redisStore}).
 */
class CatalogRevisionTest {
    static final String ACME = """
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;
    /** Acme as the newer file has it: one more alias. */
    static final String ACME_FRESH = ACME + """
                  - { alias: fresh, provider: alpha, model: m }
            """;
    /** An org only the older file has. */
    static final String GONE = org("gone");
    /** An org only the newer file has. */
    static final String ADDED = org("added");
    static final String OLD_TEXT = "orgs:\n" + ACME + GONE;
    static final String NEW_TEXT = "orgs:\n" + ACME_FRESH + ADDED;
    static final String REV1 = "revision: 1\n" + OLD_TEXT;
    static final String REV2 = "revision: 2\n" + NEW_TEXT;

    static String org(String id) {
        return """
                  - id: %s
                    keys: [{ name: app, key: "k-%s" }]
                    providers:
                      - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                    routes:
                      - { alias: chat, provider: alpha, model: m }
                """.formatted(id, id);
    }

    Vertx vertx;
    RedisServer redis;
    Map<String, SimServer> sims;
    final List<GatewayHarness> instances = Collections.synchronizedList(new ArrayList<>());

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(0, 0)))));
    }

    @AfterEach
    void stop() {
        instances.forEach(GatewayHarness::close);
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    GatewayHarness instance(String yaml) {
        return instance(yaml, HedgerowApp.redisStore(vertx, redis.url(), false));
    }

    GatewayHarness instance(String yaml, StateStore store) {
        GatewayHarness gw = GatewayHarness.start(vertx, yaml, sims, store);
        instances.add(gw);
        return gw;
    }

    static int chat(GatewayHarness gw, String key) {
        return chat(gw, key, "chat");
    }

    static int chat(GatewayHarness gw, String key, String alias) {
        return given().baseUri(gw.baseUrl()).auth().oauth2(key).contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").statusCode();
    }

    /** Every stored org's catalog version: equal before and after an instance starts = it wrote nothing. */
    static Map<String, Long> storedVersions(GatewayHarness gw) {
        return gw.core().store().catalogVersions().await().atMost(Duration.ofSeconds(5));
    }

    /** The source hash the harness gives a text (its {@code ${SIM_..._URL}} substituted). */
    String hash(String yaml) {
        return new CatalogLoader(Map.of("SIM_ALPHA_URL", sims.get("alpha").baseUrl())::get).sourceHash(yaml);
    }

    /** Fleet on revision 2 after revision 1: v1 still runs the old file and has followed. */
    GatewayHarness[] rolledOutToRevision2() {
        GatewayHarness v1 = instance(REV1);
        assertEquals(200, chat(v1, "k-gone"));
        assertEquals(401, chat(v1, "k-added"));
        GatewayHarness v2 = instance(REV2);
        assertEquals(200, chat(v2, "k-added"), "revision 2 is newer: published");
        assertEquals(401, chat(v2, "k-gone"));
        eventually(() -> chat(v1, "k-added") == 200, "the instance of the old version follows");
        return new GatewayHarness[]{v1, v2};
    }

    @Test
    void anInstanceOfTheOldFileStartingAfterTheNewOneServesTheNewCatalog() {
        GatewayHarness v2 = rolledOutToRevision2()[1];
        Map<String, Long> before = storedVersions(v2);

        GatewayHarness old;
        List<String> warnings;
        try (LogCapture log = new LogCapture()) {
            old = instance(REV1); // a cold start of the old version, as a weighted alias or traffic split sends it
            warnings = log.lines().stream().filter(l -> l.contains("older than the stored catalog")).toList();
        }
        assertEquals(before, storedVersions(old), "the older file wrote nothing");
        assertEquals(200, chat(old, "k-added"), "the org revision 2 added still authenticates");
        assertEquals(401, chat(old, "k-gone"), "the org revision 2 removed stays removed");
        assertEquals(200, chat(old, "k-acme", "fresh"), "acme stays as revision 2 has it");
        assertEquals(200, chat(v2, "k-added"));
        assertEquals(200, chat(v2, "k-acme", "fresh"));
        assertEquals(1, warnings.size(), "one warning: " + warnings);
        assertTrue(warnings.get(0).contains(" WARN") && warnings.get(0).contains(
                "the configuration file's revision 1 is older than the stored catalog's revision 2"), warnings.get(0));
        assertTrue(warnings.get(0).contains("give it revision: 3"), warnings.get(0));
        assertEquals(new FileStatus(1, FileStatus.OLDER), old.core().catalog().fileStatus());
        assertEquals(2, old.core().catalog().storedRevision());
    }

    @Test
    void anAdminEditSurvivesTheSameFileAndAnOlderOne() {
        GatewayHarness v2 = rolledOutToRevision2()[1];
        // an admin edit: acme's alias chat goes (both files have it)
        v2.core().catalog().update("acme", o -> o.withRoutesAndGroups(
                o.routes().stream().filter(r -> !r.alias().equals("chat")).toList(), o.groups()))
                .await().atMost(Duration.ofSeconds(5));
        assertEquals(404, chat(v2, "k-acme"));

        assertEquals(404, chat(instance(REV2), "k-acme"), "the same file again keeps the edit");
        GatewayHarness old = instance(REV1);
        assertEquals(404, chat(old, "k-acme"), "an older file keeps it too");
        assertEquals(200, chat(old, "k-acme", "fresh"));
        Optional<VersionedDoc> acme = v2.core().store().orgCatalog("acme").await().atMost(Duration.ofSeconds(5));
        assertEquals(2, acme.orElseThrow().revision(), "the edited org keeps the revision it came from");
        assertEquals(hash(REV2), acme.get().sourceHash());
    }

    /**
     * A newer file replaces only the orgs whose own section it changed: an admin edit of an org it left as it was
     * survives (any change to the file used to replace every org's edits; found by audit5), that org is recorded as
     * coming from the newer file, and the org the file changed takes the file's version.
     */
    @Test
    void aNewerFileKeepsTheAdminEditsOfTheOrgsItLeftAsTheyWere() {
        GatewayHarness v2 = rolledOutToRevision2()[1];
        v2.core().catalog().update("added", o -> o.withRoutesAndGroups(
                o.routes().stream().filter(r -> !r.alias().equals("chat")).toList(), o.groups()))
                .await().atMost(Duration.ofSeconds(5));
        assertEquals(404, chat(v2, "k-added"));

        String rev3 = "revision: 3\norgs:\n" + ACME + ADDED;   // acme loses its alias fresh; added is as it was
        GatewayHarness v3 = instance(rev3);
        assertEquals(new FileStatus(3, FileStatus.PUBLISHED), v3.core().catalog().fileStatus());
        assertEquals(404, chat(v3, "k-added"), "the edit of the org the file left as it was survives");
        assertEquals(404, chat(v3, "k-acme", "fresh"), "the org the file changed takes its version");
        assertEquals(200, chat(v3, "k-acme"));
        eventually(() -> chat(v2, "k-acme", "fresh") == 404, "the fleet follows");
        assertEquals(404, chat(v2, "k-added"));
        VersionedDoc added = v3.core().store().orgCatalog("added").await().atMost(Duration.ofSeconds(5))
                .orElseThrow();
        assertEquals(3, added.revision(), "recorded as coming from the newer file");
        assertEquals(hash(rev3), added.sourceHash());
        assertEquals(new FileStatus(2, FileStatus.OLDER), instance(REV2).core().catalog().fileStatus(),
                "so revision 2 is older for it too");

        // a file that changes added's section replaces it, the edit with it
        GatewayHarness v4 = instance("revision: 4\norgs:\n" + ACME + ADDED
                + "      - { alias: more, provider: alpha, model: m }\n");
        assertEquals(200, chat(v4, "k-added", "more"));
        assertEquals(200, chat(v4, "k-added"), "the edit went with the section it was made over");
    }

    @Test
    void aRollbackIsTheOldTextUnderAHigherRevision() {
        GatewayHarness v2 = rolledOutToRevision2()[1];
        GatewayHarness back = instance("revision: 3\n" + OLD_TEXT);
        assertEquals(200, chat(back, "k-gone"));
        assertEquals(401, chat(back, "k-added"));
        assertEquals(404, chat(back, "k-acme", "fresh"));
        eventually(() -> chat(v2, "k-gone") == 200 && chat(v2, "k-added") == 401, "the fleet follows the rollback");
        assertEquals(new FileStatus(3, FileStatus.PUBLISHED), back.core().catalog().fileStatus());
    }

    @Test
    void aChangedFileUnderThePublishedRevisionIsRefusedNamingBothHashes() {
        instance(REV2);
        String notRaised = "revision: 2\norgs:\n" + ACME_FRESH + ADDED + org("extra");
        GatewayHarness gw;
        List<String> errors;
        try (LogCapture log = new LogCapture()) {
            gw = instance(notRaised);
            errors = log.lines().stream().filter(l -> l.contains("is the stored catalog's revision")).toList();
        }
        assertEquals(401, chat(gw, "k-extra"), "not published");
        assertEquals(200, chat(gw, "k-added"), "this instance serves the stored catalog");
        assertEquals(1, errors.size(), "one error: " + errors);
        String e = errors.get(0);
        assertTrue(e.contains(" ERROR ") && e.contains("revision 2 (source " + hash(notRaised) + ")")
                && e.contains("(source " + hash(REV2) + ")") && e.contains("give it revision: 3"), e);
        assertEquals(new FileStatus(2, FileStatus.REVISION_NOT_RAISED), gw.core().catalog().fileStatus());

        assertEquals(200, chat(instance("revision: 3\norgs:\n" + ACME_FRESH + ADDED + org("extra")), "k-extra"),
                "raised, it is published");
    }

    @Test
    void withoutRevisionsTheLastFileStartedWins() {
        GatewayHarness a = instance(OLD_TEXT);
        GatewayHarness b = instance(NEW_TEXT);
        assertEquals(200, chat(b, "k-added"));
        assertEquals(401, chat(b, "k-gone"));
        GatewayHarness againA = instance(OLD_TEXT);
        assertEquals(200, chat(againA, "k-gone"));
        assertEquals(401, chat(againA, "k-added"));
        eventually(() -> chat(b, "k-gone") == 200, "the fleet follows the last file started");
        assertEquals(new FileStatus(0, FileStatus.PUBLISHED), againA.core().catalog().fileStatus());
        eventually(() -> chat(a, "k-gone") == 200, "the first instance too");
    }

    @Test
    void aFileWithoutRevisionDoesNotRevertOneWithARevision() {
        GatewayHarness v1 = instance(REV1); // the first rollout that sets a revision, over a fleet without one
        GatewayHarness unrevised;
        List<String> warnings;
        try (LogCapture log = new LogCapture()) {
            unrevised = instance(NEW_TEXT); // an instance of the version before it cold-starts
            warnings = log.lines().stream().filter(l -> l.contains("older than the stored catalog")).toList();
        }
        assertEquals(401, chat(unrevised, "k-added"));
        assertEquals(200, chat(unrevised, "k-gone"));
        assertEquals(200, chat(v1, "k-gone"));
        assertEquals(1, warnings.size(), "one warning: " + warnings);
        assertTrue(warnings.get(0).contains("the configuration file has no revision is older than the stored "
                + "catalog's revision 1"), warnings.get(0));
    }

    /**
     * The publication lock is for writers: an instance whose file is published already (every instance of a deploy
     * but the first; a burst of cold starts when traffic comes) or older than the stored catalog decides so from one
     * read and never takes it, so that a scale-out burst does not queue on it.
     */
    @Test
    void anInstanceWithNothingToPublishTakesNoLock() {
        instance(REV2);
        java.util.concurrent.atomic.AtomicInteger locks = new java.util.concurrent.atomic.AtomicInteger();
        StateStore counting = new ForwardingStateStore(HedgerowApp.redisStore(vertx, redis.url(), false)) {
            @Override
            public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
                if (name.equals(CatalogService.PUBLISH_LOCK)) {
                    locks.incrementAndGet();
                }
                return super.tryLock(name, owner, ttl);
            }
        };
        GatewayHarness same = instance(REV2, counting);
        GatewayHarness older = instance(REV1, counting);
        assertEquals(0, locks.get(), "neither took the publication lock");
        assertEquals(new FileStatus(2, FileStatus.UNCHANGED), same.core().catalog().fileStatus());
        assertEquals(new FileStatus(1, FileStatus.OLDER), older.core().catalog().fileStatus());
        assertEquals(200, chat(same, "k-added"));
        assertEquals(200, chat(older, "k-added"));

        instance("revision: 3\n" + NEW_TEXT + org("extra"), counting);
        assertEquals(1, locks.get(), "a file with something to write takes it");
    }

    /**
     * Two instances starting at once from different files publish one after the other (the publication lock): the
     * newer file's instance, arriving while the older one is between its reads and its writes, waits, then sees and
     * replaces what the older one wrote, the org only the older file has included. Without the lock it would have
     * read before that org existed and left it published.
     */
    @Test
    void instancesStartingAtOnceFromTwoFilesPublishInTurnAndTheNewerWins() throws Exception {
        CompletableFuture<Void> newerWaits = new CompletableFuture<>();
        StateStore newerStore = new ForwardingStateStore(HedgerowApp.redisStore(vertx, redis.url(), false)) {
            @Override
            public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
                return super.tryLock(name, owner, ttl).invoke(taken -> {
                    if (!taken && name.equals(CatalogService.PUBLISH_LOCK)) {
                        newerWaits.complete(null);
                    }
                });
            }
        };
        AtomicBoolean first = new AtomicBoolean(true);
        AtomicReference<CompletableFuture<GatewayHarness>> newer = new AtomicReference<>();
        StateStore olderStore = new ForwardingStateStore(HedgerowApp.redisStore(vertx, redis.url(), false)) {
            @Override
            public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
                if (!first.getAndSet(false)) {
                    return super.putOrgCatalog(orgId, doc, expectedVersion);
                }
                // between the older file's reads and its first write, the newer file's instance starts
                newer.set(CompletableFuture.supplyAsync(() -> instance(REV2, newerStore)));
                return Uni.createFrom().completionStage(newerWaits).ifNoItem().after(Duration.ofSeconds(5))
                        .failWith(() -> new AssertionError("the newer file's publication did not wait"))
                        .flatMap(x -> super.putOrgCatalog(orgId, doc, expectedVersion));
            }
        };
        GatewayHarness older = instance(REV1, olderStore);
        GatewayHarness newest = newer.get().get(10, TimeUnit.SECONDS);
        assertEquals(200, chat(newest, "k-added"));
        assertEquals(401, chat(newest, "k-gone"), "the org only the older file has was seen and removed");
        assertEquals(new FileStatus(2, FileStatus.PUBLISHED), newest.core().catalog().fileStatus());
        eventually(() -> chat(older, "k-added") == 200 && chat(older, "k-gone") == 401,
                "the older file's instance follows the newer catalog");
        assertEquals(200, chat(older, "k-acme", "fresh"));
    }

    /**
     * A newer file's instance starts while Redis is unreachable from it (a rollout during a network fault): it serves
     * its file at once, and when Redis answers its file is published, under the usual rules, so the fleet takes it.
     * Its publication, kept as a pending edit, was refused as an admin edit lost to another (the older file's org),
     * counted and logged as such, and never tried again: the new alias answered 404 on every instance, the new one
     * included (found by hunt7).
     */
    @Test
    void aNewerFilePublishedWhileRedisWasUnreachableReachesTheFleetWhenItAnswers() {
        GatewayHarness v1 = instance(REV1);
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            link.cut();
            RedisStores.Opened cutOff = RedisStores.open(vertx, link.redisUrl());
            ResilientStateStore store = new ResilientStateStore(cutOff.store(), new MemoryStateStore(Ticker.system()),
                    new ResilientStateStore.Settings(Duration.ofMillis(300), 4, 0.5, Duration.ofMillis(200), 1));
            try {
                GatewayHarness v2 = instance(REV2, store);
                assertEquals(200, chat(v2, "k-acme", "fresh"), "the new file is served at once");
                assertEquals(404, chat(v1, "k-acme", "fresh"), "precondition: the fleet has not taken it");

                link.restore();
                eventually(() -> chat(v1, "k-acme", "fresh") == 200 && chat(v2, "k-acme", "fresh") == 200,
                        "the fleet serves the new file");
                assertEquals(200, chat(v1, "k-added", "chat"));
                assertEquals(0, store.lostEdits(), "a publication is no admin edit lost to another");
            } finally {
                instances.forEach(GatewayHarness::close);
                instances.clear();
                cutOff.close();
            }
        }
    }
}
