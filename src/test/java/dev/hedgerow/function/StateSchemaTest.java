package dev.hedgerow.function;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.Resp;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.greaterThan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The state schema (DESIGN.md "State", README "Shared state"), checked on the real application's Redis after traffic
 * over HTTP through every function: each key is one the schema names, of its Redis type, in its hash tag, and has a
 * TTL within its bound, but for the few kept for good (the org list, catalogs, the trimmed audit streams and an
 * operator's standing or verification verdict). A key without a TTL that is none of those would outlive its use and
 * pile up across days.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class StateSchemaTest {
    static final long DAY = Duration.ofDays(1).toMillis();

    /** One kind of key: its pattern, Redis type, and the longest TTL it may have (0: kept, no TTL). */
    record Kind(String name, Pattern pattern, String type, long maxTtlMs) {
        static Kind of(String name, String regex, String type, Duration maxTtl) {
            return new Kind(name, Pattern.compile(regex), type, maxTtl == null ? 0 : maxTtl.toMillis());
        }
    }

    static final String ROUTE = "hr:\\{r:[^{}/]+/[^{}]+\\}";
    static final String ORG = "hr:\\{o:[^{}/]+\\}";
    static final List<Kind> SCHEMA = List.of(
            Kind.of("orgs", "hr:orgs", "set", null),
            Kind.of("catalog", ORG + ":catalog", "hash", null),
            Kind.of("catalog:version", ORG + ":catalog:version", "string", null),
            Kind.of("audit", ORG + ":audit", "stream", null),
            Kind.of("admin audit", ORG + ":audit:admin", "stream", null),
            Kind.of("ledger", ORG + ":ledger:\\d{4}-\\d{2}-\\d{2}", "hash", Duration.ofDays(402)),
            Kind.of("ledger-writers", ORG + ":ledger-writers:\\d{4}-\\d{2}-\\d{2}", "hash", Duration.ofDays(7)),
            Kind.of("affinity", ORG + ":affinity:[^{}]+", "zset", Duration.ofMinutes(5)),
            Kind.of("hedge", ORG + ":hedge:\\d+:\\d+", "hash", Duration.ofDays(1)),
            Kind.of("org blob", ORG + ":blob:[^{}]+", "string", Duration.ofDays(30)),
            Kind.of("cursor", "hr:\\{g:[^{}/]+/[^{}]+\\}:cursor", "string", Duration.ofHours(2)),
            Kind.of("cool", ROUTE + ":cool", "string", Duration.ofDays(1)),
            Kind.of("fails", ROUTE + ":fails", "string", Duration.ofDays(1)),
            Kind.of("lastfail", ROUTE + ":lastfail", "string", Duration.ofDays(1)),
            Kind.of("probe", ROUTE + ":probe", "string", Duration.ofMinutes(10)),
            Kind.of("ra", ROUTE + ":ra", "string", Duration.ofDays(1)),
            Kind.of("leases", ROUTE + ":leases", "zset", Duration.ofMinutes(2)),
            Kind.of("usage", ROUTE + ":usage:\\d+", "hash", Duration.ofDays(2)),
            Kind.of("route blob", ROUTE + ":blob:(?<blob>[^{}]+)", "string", Duration.ofDays(7)),
            Kind.of("blob index", ROUTE + ":blobs", "hash", Duration.ofDays(7)),
            Kind.of("lock", "hr:\\{lock:[^{}]+\\}", "string", Duration.ofHours(1)));
    /** Route blobs an operator sets through the admin API, which hold until changed, and the times they were set. */
    static final Set<String> OPERATOR_BLOBS = Set.of("standing", "verification", "verification_operator",
            "standing@at", "verification_operator@at");

    @Inject
    HedgerowApp app;

    @Test
    void everyKeyTheFunctionsWriteIsInTheSchemaWithItsTypeAndTtl() {
        // the gateway: streamed and whole answers (usage, ledger, learnt models, rotation, hedge counts), a refusal
        // (audit), a 429 with Retry-After (breaker counts, cooldown, the hold)
        for (String alias : List.of("kimi3", "kimi3", "solo")) { // not billed, metered, keyed: their ledgers are other tests'
            for (boolean stream : new boolean[]{true, false}) {
                given().auth().oauth2("k-acme").contentType("application/json")
                        .body("{\"model\":\"" + alias + "\",\"stream\":" + stream
                                + ",\"messages\":[{\"role\":\"user\",\"content\":\"schema\"}]}")
                        .post("/v1/chat/completions").then().statusCode(200);
            }
        }
        given().auth().oauth2("k-other").contentType("application/json")
                .body("{\"model\":\"secret\",\"messages\":[{\"role\":\"user\",\"content\":\"schema\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"kimi3\",\"provider\":{\"only\":[\"nobody\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"schema\"}]}")
                .post("/v1/chat/completions").then().statusCode(400);
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.rateLimited(60));
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"kimi3\",\"provider\":{\"only\":[\"alpha\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"schema\"}]}")
                .post("/v1/chat/completions").then().statusCode(greaterThan(399));
        // the prober: a capacity report, a probe round (its lock, verification verdicts, probe-learnt models)
        given().auth().oauth2("cap-beta").contentType("application/json")
                .body("{\"route\":\"kimi3-beta\",\"queue_depth\":1,\"memory_pressure\":0.1}")
                .post("/v1/capacity").then().statusCode(200);
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200);
        // the console: an operator's standing
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"standing\":\"good\"}")
                .put("/admin/routes/standing").then().statusCode(200);

        try {
            Set<String> required = Set.of("orgs", "catalog", "catalog:version", "audit", "admin audit", "ledger",
                    "ledger-writers", "hedge", "cursor", "fails", "ra", "usage", "route blob", "blob index");
            Map<String, Integer> seen = new TreeMap<>();
            List<String> problems = new ArrayList<>();
            // fire-and-forget writes (the write batch, the ledger) land within moments
            eventually(() -> {
                seen.clear();
                problems.clear();
                check(AppTestResource.redis().port(), seen, problems);
                return seen.keySet().containsAll(required);
            }, "every kind of key the traffic writes is in Redis: " + required);
            assertEquals(List.of(), problems, "keys off the schema (kinds seen: " + seen + ")");
        } finally {
            app.core().store().resetHealth("acme/kimi3-alpha").await().atMost(Duration.ofSeconds(5));
        }
    }

    /** Scans every key of the server; counts each kind seen, and describes each key off the schema. */
    static void check(int port, Map<String, Integer> seen, List<String> problems) {
        List<String> keys = scan(port);
        Set<String> keptBlobRoutes = new HashSet<>();
        Map<String, Kind> kinds = new LinkedHashMap<>();
        for (String key : keys) {
            Kind kind = SCHEMA.stream().filter(k -> k.pattern().matcher(key).matches()).findFirst().orElse(null);
            if (kind == null) {
                problems.add(key + ": no key of the schema has this shape");
                continue;
            }
            kinds.put(key, kind);
        }
        Map<String, Long> ttls = new LinkedHashMap<>();
        Map<String, String> types = new LinkedHashMap<>();
        for (String key : kinds.keySet()) {
            types.put(key, command(port, "TYPE", key));
            ttls.put(key, Long.parseLong(command(port, "PTTL", key)));
            Matcher m = kinds.get(key).pattern().matcher(key);
            if (m.matches() && kinds.get(key).name().equals("route blob") && OPERATOR_BLOBS.contains(m.group("blob"))
                    && ttls.get(key) == -1) {
                keptBlobRoutes.add(key.substring(0, key.indexOf("}") + 1));
            }
        }
        for (Map.Entry<String, Kind> e : kinds.entrySet()) {
            String key = e.getKey();
            Kind kind = e.getValue();
            long ttl = ttls.get(key);
            if (ttl == -2) {
                continue; // expired between the scan and now
            }
            seen.merge(kind.name(), 1, Integer::sum);
            if (!kind.type().equals(types.get(key))) {
                problems.add(key + ": a " + types.get(key) + ", not a " + kind.type());
            }
            Matcher m = kind.pattern().matcher(key);
            boolean operatorBlob = m.matches() && kind.name().equals("route blob")
                    && OPERATOR_BLOBS.contains(m.group("blob"));
            boolean indexOfKept = kind.name().equals("blob index")
                    && keptBlobRoutes.contains(key.substring(0, key.indexOf("}") + 1));
            boolean kept = kind.maxTtlMs() == 0 || operatorBlob || indexOfKept;
            if (ttl == -1 && !kept) {
                problems.add(key + ": no TTL (a " + kind.name() + " key must expire)");
            } else if (ttl >= 0 && kind.maxTtlMs() == 0) {
                problems.add(key + ": expires in " + ttl + " ms (a " + kind.name() + " key is kept)");
            } else if (ttl > kind.maxTtlMs() && kind.maxTtlMs() > 0) {
                problems.add(key + ": TTL " + ttl + " ms, above the " + kind.maxTtlMs() / DAY + " d "
                        + kind.maxTtlMs() % DAY + " ms bound of a " + kind.name() + " key");
            }
        }
    }

    static List<String> scan(int port) {
        List<String> out = new ArrayList<>();
        String cursor = "0";
        do {
            String[] reply = command(port, "SCAN", cursor, "COUNT", "1000").split("\n", -1);
            cursor = reply[0];
            out.addAll(Arrays.asList(reply).subList(1, reply.length).stream().filter(k -> !k.isEmpty()).toList());
        } while (!cursor.equals("0"));
        return out;
    }

    static String command(int port, String... args) {
        try {
            return Resp.command(port, args);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theSchemaCheckFindsAKeyWithoutItsTtl() {
        // the check itself can fail: a learnt-model blob left without a TTL is named
        int port = AppTestResource.redis().port();
        String key = "hr:{r:acme/schema-probe}:blob:ttft";
        command(port, "SET", key, "x");
        try {
            Map<String, Integer> seen = new TreeMap<>();
            List<String> problems = new ArrayList<>();
            check(port, seen, problems);
            assertTrue(problems.contains(key + ": no TTL (a route blob key must expire)"), problems.toString());
        } finally {
            command(port, "DEL", key);
        }
    }
}
