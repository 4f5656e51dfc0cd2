package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's {@code connect_timeout} through the HTTP API: "a timeout indicates that any of those stages [connecting,
 * forwarding the request, reading the response head] exceeded the allowed time", so a connection that does not come
 * within {@code connect_timeout} is a {@code timeout} under {@code failover_criteria}, not an {@code error}. The
 * unreachable upstream is a real listener whose accept queue is full: the kernel drops further SYNs, so a connection
 * attempt to it neither succeeds nor fails until the client gives up.
 */
class KongConnectTimeoutTest {
    static String yaml(int holePort) {
        return """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                      - { id: hole, base_url: "http://127.0.0.1:%d/v1" }
                    routes:
                      - { id: to-a, alias: ctimeout, provider: hole, model: m-hole, weight: 100 }
                      - { id: to-b, alias: ctimeout, provider: sim, model: m-to-b, weight: 0 }
                      - { id: te-a, alias: cterror, provider: hole, model: m-hole, weight: 100 }
                      - { id: te-b, alias: cterror, provider: sim, model: m-te-b, weight: 0 }
                      - { id: tt-a, alias: ctonly, provider: hole, model: m-hole, weight: 100 }
                      - { id: tt-b, alias: ctonly, provider: sim, model: m-tt-b, weight: 0 }
                    groups:
                      ctimeout: { strategy: weighted, hedging: false, connect_timeout: 300ms,
                                  breaker: { max_fails: 0 } }
                      cterror: { strategy: weighted, hedging: false, connect_timeout: 300ms,
                                 failover_criteria: [error, http_500], breaker: { max_fails: 0 } }
                      ctonly: { strategy: weighted, hedging: false, connect_timeout: 300ms,
                                failover_criteria: [timeout, http_500], breaker: { max_fails: 0 } }
                """.formatted(holePort);
    }

    static ServerSocket hole;
    static final List<Socket> fillers = new ArrayList<>();
    static GatewayHarness gw;

    @BeforeAll
    static void start() throws IOException {
        hole = new ServerSocket();
        hole.bind(new InetSocketAddress("127.0.0.1", 0), 1);
        // fill the accept queue (never accepted) until a connection attempt hangs
        for (int i = 0; i < 32; i++) {
            Socket s = new Socket();
            try {
                s.connect(hole.getLocalSocketAddress(), 200);
                fillers.add(s);
            } catch (SocketTimeoutException full) {
                s.close();
                break;
            }
        }
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        gw = GatewayHarness.start(yaml(hole.getLocalPort()), Map.of("sim", SimConfig.of(5).withApiKey("sk-sim")
                .withModel("m-to-b", instant).withModel("m-te-b", instant).withModel("m-tt-b", instant)));
    }

    @AfterAll
    static void stop() throws IOException {
        gw.close();
        for (Socket s : fillers) {
            s.close();
        }
        hole.close();
    }

    static Response send(String alias) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"connect\"}]}")
                .post("/v1/chat/completions");
    }

    static List<String> trail(Response r) throws IOException {
        List<String> out = new ArrayList<>();
        for (JsonNode a : Json.parse(r.header("x-hedgerow-attempts").getBytes())) {
            out.add(a.path("route").asText() + ":" + a.path("outcome").asText()
                    + (a.path("error").isNull() ? "" : ":" + a.path("error").asText()));
        }
        return out;
    }

    @Test
    void aConnectTimeoutFailsOverAsATimeout() throws IOException {
        Response r = send("ctimeout");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("to-a:failed:transport_connect_timeout", "to-b:success"), trail(r));
    }

    @Test
    void aConnectTimeoutTheCriteriaDoNotNameIsA504WithoutFailover() {
        Response r = send("cterror");
        assertEquals(504, r.statusCode(), r.asString());
        assertEquals("upstream_timeout", r.jsonPath().getString("error.code"));
        assertTrue(r.jsonPath().getString("error.message").contains("failover_criteria do not include timeout"),
                r.asString());
        assertEquals(0, gw.sim("sim").stats("m-te-b").received(), "no failover on a timeout the criteria leave out");
    }

    @Test
    void aConnectTimeoutFailsOverUnderTimeoutAlone() throws IOException {
        Response r = send("ctonly");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("tt-a:failed:transport_connect_timeout", "tt-b:success"), trail(r));
    }
}
