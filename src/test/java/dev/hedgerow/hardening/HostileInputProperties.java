package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.testsupport.GatewayHarness;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Generated hostile requests against a real gateway instance: whatever the body, headers or method, the answer is
 * a 4xx in the OpenAI error envelope, never a 5xx and never a hang; fields Hedgerow does not know pass through to
 * the provider untouched. Tries are bounded so the suite stays fast.
 */
class HostileInputProperties {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
              - id: other
                keys: [{ name: app, key: "k-other" }]
                providers:
                  - { id: beta, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: secret, provider: beta, model: alpha-model }
            """;
    static final List<String> CHAT_PATHS = List.of("/v1/chat/completions", "/models/chat/v1/chat/completions");

    static GatewayHarness gw;
    static HttpClient client;

    @BeforeContainer
    static void start() {
        gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(3).withApiKey("sk-alpha").withModel(
                "alpha-model", ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(0, 0)))));
        client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterContainer
    static void stop() {
        gw.close();
    }

    /** A request the gateway must refuse, with the path it goes to. */
    record Hostile(String path, byte[] body, String what) {
        @Override
        public String toString() {
            return what + " -> " + path + ": " + new String(body, 0, Math.min(body.length, 300),
                    StandardCharsets.UTF_8);
        }
    }

    // ---- properties ------------------------------------------------------------------------------------------

    @Property(tries = 200)
    void invalidBodiesGetA400Envelope(@ForAll("invalidBodies") Hostile h) {
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", h.path(),
                "Authorization: Bearer k-acme\r\nContent-Type: application/json\r\n".getBytes(StandardCharsets.UTF_8),
                h.body()));
        assertEquals(400, r.status(), h + " => " + r.body());
        Envelope.assert4xx(r.status(), r.body(), h.toString());
    }

    @Property(tries = 200)
    void hostileHeadersGetA4xxEnvelope(@ForAll("hostileHeaders") byte[] headers, @ForAll("chatOrModelsPath") String path,
                                       @ForAll("invalidBodies") Hostile body) {
        boolean get = path.equals("/v1/models");
        // a body is invalid for the path it was made for (a bad "model" is fine under /models/{alias}/...)
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request(get ? "GET" : "POST", get ? path : body.path(),
                headers,
                get ? null : body.body()));
        if (get && r.status() == 200) {
            // a valid key may list: only its own org's aliases, whatever else the headers say
            assertTrue(r.body().contains("\"id\":\"chat\"") && !r.body().contains("secret"), r.body());
            return;
        }
        Envelope.assert4xx(r.status(), r.body(), new String(headers, StandardCharsets.ISO_8859_1));
    }

    @Property(tries = 100)
    void otherMethodsOnGatewayPathsGetA405Envelope(@ForAll("chatOrModelsPath") String path,
                                                   @ForAll("otherMethods") String method) {
        if (path.equals("/v1/models") ? method.equals("GET") : method.equals("POST")) {
            return;
        }
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request(method, path,
                "Authorization: Bearer k-acme\r\n".getBytes(StandardCharsets.UTF_8), new byte[0]));
        assertEquals(405, r.status(), method + " " + path + " => " + r.body());
        Envelope.assert4xx(r.status(), r.body(), method + " " + path);
    }

    @Property(tries = 50)
    void unknownFieldsPassThroughUntouched(@ForAll("unknownFields") Map<String, JsonNode> extra)
            throws IOException, InterruptedException {
        String marker = UUID.randomUUID().toString();
        ObjectNode body = validBody(marker);
        extra.forEach(body::set);
        HttpResponse<String> resp = client.send(HttpRequest.newBuilder(URI.create(gw.baseUrl()
                        + "/v1/chat/completions")).timeout(Duration.ofSeconds(10))
                .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, resp.statusCode(), resp.body());
        SimStats.RecordedRequest sent = gw.sim("alpha").stats("alpha-model").recent().stream()
                .filter(r -> r.body().contains(marker)).findFirst().orElseThrow();
        JsonNode upstream = JSON.readTree(sent.body());
        for (Map.Entry<String, JsonNode> e : extra.entrySet()) {
            // compared as parsed text: an int sent as a long reads back as an int
            assertEquals(JSON.readTree(e.getValue().toString()), upstream.get(e.getKey()), "field " + e.getKey());
        }
    }

    // ---- generators ------------------------------------------------------------------------------------------

    static ObjectNode validBody(String prompt) {
        ObjectNode b = F.objectNode();
        b.put("model", "chat");
        b.putArray("messages").addObject().put("role", "user").put("content", prompt);
        return b;
    }

    @Provide
    Arbitrary<String> chatOrModelsPath() {
        return Arbitraries.of("/v1/chat/completions", "/models/chat/v1/chat/completions", "/v1/models");
    }

    @Provide
    Arbitrary<String> otherMethods() {
        return Arbitraries.of("GET", "PUT", "DELETE", "PATCH", "POST");
    }

    @Provide
    Arbitrary<Hostile> invalidBodies() {
        Arbitrary<String> path = Arbitraries.of(CHAT_PATHS);
        return Arbitraries.frequencyOf(
                Tuple.of(2, Combinators.combine(path, Arbitraries.bytes().array(byte[].class).ofMaxSize(400))
                        .as((p, b) -> new Hostile(p, b, "random bytes"))
                        .filter(h -> !startsLikeAnObject(h.body()))),
                Tuple.of(2, Combinators.combine(path, Arbitraries.doubles().between(0, 1))
                        .as((p, cut) -> truncated(p, cut))),
                Tuple.of(4, wrongTypes()),
                Tuple.of(1, Combinators.combine(path, Arbitraries.integers().between(Json.MAX_DEPTH + 1, 20_000),
                        Arbitraries.of('[', '{')).as(HostileInputProperties::deep)),
                Tuple.of(2, Combinators.combine(path, Arbitraries.of(INVALID_UTF8), Arbitraries.integers()
                        .between(0, 10)).as(HostileInputProperties::badUtf8)),
                Tuple.of(1, Combinators.combine(path, Arbitraries.of("", " ", "\n", "null", "[]", "\"chat\"", "42",
                        "true", "{}", "{\"model\":\"chat\"}", "{\"messages\":[]}")).as(
                        (p, s) -> new Hostile(p, s.getBytes(StandardCharsets.UTF_8), "not a request"))));
    }

    /** Random bytes that happen to open a JSON object could, in theory, be valid: keep them out. */
    private static boolean startsLikeAnObject(byte[] b) {
        for (byte x : b) {
            if (x == '{') {
                return true;
            }
        }
        return false;
    }

    private static Hostile truncated(String path, double cut) {
        byte[] full = validBody("a complete request").toString().getBytes(StandardCharsets.UTF_8);
        int n = (int) Math.min(full.length - 1, Math.floor(cut * full.length));
        return new Hostile(path, java.util.Arrays.copyOf(full, n), "truncated at " + n);
    }

    private static Hostile deep(String path, int depth, char open) {
        StringBuilder sb = new StringBuilder("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"x_deep\":");
        for (int i = 0; i < depth; i++) {
            sb.append(open == '[' ? "[" : "{\"a\":");
        }
        sb.append("1");
        for (int i = 0; i < depth; i++) {
            sb.append(open == '[' ? "]" : "}");
        }
        sb.append('}');
        return new Hostile(path, sb.toString().getBytes(StandardCharsets.UTF_8), "nested " + depth);
    }

    /** Malformed UTF-8: stray continuation, truncated sequences, overlong forms, encoded surrogates, 0xFF. */
    static final List<byte[]> INVALID_UTF8 = List.of(new byte[] {(byte) 0xFF}, new byte[] {(byte) 0x80},
            new byte[] {(byte) 0xC3, 0x28}, new byte[] {(byte) 0xE2, (byte) 0x82}, new byte[] {(byte) 0xC0,
                    (byte) 0xAF}, new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, new byte[] {(byte) 0xF0, 0x28,
                    (byte) 0x8C, (byte) 0xBC}, new byte[] {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80,
                    (byte) 0x80}, new byte[] {(byte) 0xE0, (byte) 0x80, (byte) 0xAF});

    private static Hostile badUtf8(String path, byte[] bad, int at) {
        String prompt = "hello world";
        byte[] before = ("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt.substring(0, Math.min(at, prompt.length()))).getBytes(StandardCharsets.UTF_8);
        byte[] after = (prompt.substring(Math.min(at, prompt.length())) + "\"}]}").getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(before);
        out.writeBytes(bad);
        out.writeBytes(after);
        return new Hostile(path, out.toByteArray(), "invalid UTF-8");
    }

    /** A value of a JSON type other than the one the field needs, or a value out of range. */
    private Arbitrary<Hostile> wrongTypes() {
        Map<String, List<String>> bad = Map.ofEntries(
                Map.entry("model", List.of("5", "true", "{}", "[\"chat\"]", "\"\"", "\"   \"", "null")),
                Map.entry("messages", List.of("5", "\"hi\"", "true", "{}", "[]", "[1]", "[\"x\"]", "[{}]",
                        "[{\"role\":5,\"content\":\"x\"}]", "[{\"role\":\"\",\"content\":\"x\"}]",
                        "[{\"role\":\"user\",\"content\":5}]", "[{\"role\":\"user\",\"content\":{}}]",
                        "[{\"role\":\"user\",\"content\":true}]", "[null]", "null",
                        "[{\"role\":\"user\",\"content\":\"\\ud800\"}]",
                        "[{\"role\":\"user\",\"content\":\"ok\"},{\"role\":[],\"content\":\"x\"}]")),
                Map.entry("stream", List.of("1", "\"true\"", "{}", "[]")),
                Map.entry("stream_options", List.of("1", "\"x\"", "true", "[]")),
                Map.entry("max_tokens", List.of("0", "-1", "1.5", "\"10\"", "true", "1e12", "[]", "99999999999")),
                Map.entry("max_completion_tokens", List.of("0", "-5", "2.5", "\"x\"", "{}")),
                Map.entry("temperature", List.of("-0.1", "2.01", "\"0.7\"", "true", "[]", "1e400")),
                Map.entry("top_p", List.of("-1", "1.01", "\"x\"", "{}")),
                Map.entry("n", List.of("0", "129", "1.5", "\"2\"", "false")),
                Map.entry("seed", List.of("0.5", "\"7\"", "1e30", "[]")),
                Map.entry("stop", List.of("5", "true", "{}", "[1]", "[\"a\",null]")),
                Map.entry("logit_bias", List.of("[]", "5", "{\"1\":\"x\"}", "{\"1\":101}")),
                Map.entry("tools", List.of("{}", "\"x\"", "[1]", "[\"f\"]")),
                Map.entry("response_format", List.of("\"json\"", "{}", "{\"type\":1}")),
                Map.entry("provider", List.of("1", "\"alpha\"", "true", "[]", "{\"only\":\"alpha\"}",
                        "{\"only\":[1]}", "{\"only\":[\"\"]}", "{\"ignore\":{}}", "{\"order\":[null]}",
                        "{\"sort\":5}", "{\"sort\":\"fastest\"}", "{\"allow_fallbacks\":\"no\"}",
                        "{\"require_parameters\":1}", "{\"max_price\":5}", "{\"max_price\":{\"prompt\":-1}}",
                        "{\"max_price\":{\"completion\":\"x\"}}", "{\"only\":[\"nosuch\"]}",
                        "{\"ignore\":[\"alpha\"]}")));
        List<String> fields = List.copyOf(bad.keySet());
        return Arbitraries.of(fields).flatMap(field -> Combinators.combine(Arbitraries.of(bad.get(field)),
                Arbitraries.of(CHAT_PATHS)).as((value, path) -> {
                    // the path form takes the alias from the path: a bad "model" is then simply overridden
                    String p = field.equals("model") ? "/v1/chat/completions" : path;
                    String body = "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]";
                    body = field.equals("model") ? "{\"model\":" + value + ",\"messages\":[{\"role\":\"user\","
                            + "\"content\":\"x\"}]" : field.equals("messages") ? "{\"model\":\"chat\",\"messages\":"
                            + value : body + ",\"" + field + "\":" + value;
                    return new Hostile(p, (body + "}").getBytes(StandardCharsets.UTF_8), field + "=" + value);
                }));
    }

    @Provide
    Arbitrary<byte[]> hostileHeaders() {
        Arbitrary<String> auth = Arbitraries.oneOf(
                Arbitraries.just(""),
                Arbitraries.just("Authorization: Bearer\r\n"),
                Arbitraries.just("Authorization: Bearer k-acme\r\n"),
                Arbitraries.just("Authorization: Basic azphY21lOng=\r\n"),
                Arbitraries.strings().withCharRange('!', '~').ofMaxLength(200)
                        .map(s -> "Authorization: Bearer " + s + "\r\n"),
                Arbitraries.strings().withCharRange('!', '~').ofMaxLength(60).map(s -> "Authorization: " + s + "\r\n"));
        Arbitrary<String> junk = Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(20).flatMap(name ->
                        Arbitraries.strings().withCharRange(' ', '~').ofMaxLength(300)
                                .map(v -> "X-" + name + ": " + v + "\r\n"))
                .list().ofMaxSize(5).map(l -> String.join("", l));
        Arbitrary<String> contentType = Arbitraries.of("", "Content-Type: application/json\r\n",
                "Content-Type: text/plain\r\n", "Content-Type: application/x-www-form-urlencoded\r\n",
                "Content-Type: multipart/form-data; boundary=xyz\r\n", "Content-Type: application/json; charset=latin1\r\n",
                "Content-Encoding: gzip\r\n", "Expect: 100-continue\r\n");
        // sometimes a header block far over the server's limit (431)
        Arbitrary<String> huge = Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.just("")),
                Tuple.of(1, Arbitraries.integers().between(9_000, 200_000).map(n -> "X-Big: " + "b".repeat(n) + "\r\n")));
        Arbitrary<String> x = Arbitraries.of("X-Hedgerow-Alias: secret\r\n", "X-Hedgerow-Alias: \r\n", "");
        return Combinators.combine(auth, junk, contentType, huge, x)
                .as((a, j, c, h, xa) -> (a + j + c + h + xa).getBytes(StandardCharsets.ISO_8859_1));
    }

    @Provide
    Arbitrary<Map<String, JsonNode>> unknownFields() {
        Arbitrary<String> names = Arbitraries.strings().withCharRange('a', 'z').withChars('_').ofMinLength(1)
                .ofMaxLength(12).map(s -> "zz_" + s);
        return Arbitraries.maps(names, jsonValue(3)).ofMinSize(1).ofMaxSize(4);
    }

    private static Arbitrary<JsonNode> jsonValue(int depth) {
        Arbitrary<JsonNode> leaf = Arbitraries.oneOf(
                Arbitraries.integers().map(i -> (JsonNode) F.numberNode(i)),
                Arbitraries.longs().map(i -> (JsonNode) F.numberNode(i)),
                Arbitraries.doubles().between(-1e9, 1e9).map(d -> (JsonNode) F.numberNode(d)),
                Arbitraries.of(true, false).map(b -> (JsonNode) F.booleanNode(b)),
                Arbitraries.just((JsonNode) F.nullNode()),
                Arbitraries.strings().withCharRange(' ', '~').withCharRange('\u00a0', '\u07ff').ofMaxLength(40)
                        .map(s -> (JsonNode) F.textNode(s)),
                Arbitraries.strings().alpha().ofMaxLength(5).map(s -> (JsonNode) F.textNode(s + "😀\u0000\"\\")));
        if (depth == 0) {
            return leaf;
        }
        Arbitrary<JsonNode> inner = Arbitraries.lazy(() -> jsonValue(depth - 1));
        Arbitrary<JsonNode> array = inner.list().ofMaxSize(3).map(l -> {
            ArrayNode a = F.arrayNode();
            l.forEach(a::add);
            return a;
        });
        Arbitrary<JsonNode> object = Arbitraries.maps(Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(6), inner)
                .ofMaxSize(3).map(m -> {
                    ObjectNode o = F.objectNode();
                    m.forEach(o::set);
                    return o;
                });
        return Arbitraries.frequencyOf(Tuple.of(4, leaf), Tuple.of(1, array), Tuple.of(1, object));
    }
}
