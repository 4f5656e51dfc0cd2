package dev.hedgerow.function;

import dev.hedgerow.testsupport.FakeEnvironment;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.emptyString;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application started with every one of its variables set but empty at once ({@code HEDGEROW_CONFIG=},
 * {@code REDIS_URL=}, {@code HEDGEROW_JIT_IDLE_PRIORITY=}, ... every setting of {@link HedgerowSettings#ALL}, and
 * Quarkus' {@code QUARKUS_HTTP_PORT=} and {@code QUARKUS_HTTP_HOST=} of {@link HedgerowSettings#QUARKUS}), as an
 * env file that leaves per-deployment values empty sets them ({@code functions/*}/function.env): each means its
 * default (the demo catalog, embedded state, every function, Quarkus' port and host), and a chat request is routed.
 * The process used to fail at start with only "Failed to load config value of type boolean for:
 * hedgerow.jit.idle-priority", since an empty value was not a missing one to an injected default; an empty
 * {@code QUARKUS_HTTP_PORT} still stopped it ("SRCFG00040: The config property quarkus.http.port is defined as the
 * empty String").
 */
@QuarkusTest
@TestProfile(EmptySettingsStartupTest.EveryVariableEmpty.class)
class EmptySettingsStartupTest {

    /** Every Hedgerow variable, empty, as the environment; none of the suite's shared test resources. */
    public static class EveryVariableEmpty implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            Map<String, String> env = new LinkedHashMap<>();
            HedgerowSettings.ALL.forEach(s -> env.put(s.variable(), ""));
            env.put("QUARKUS_HTTP_PORT", "");
            env.put("QUARKUS_HTTP_HOST", " ");
            return List.of(new TestResourceEntry(FakeEnvironment.Resource.class, env));
        }
    }

    @Inject
    HedgerowApp app;

    @Test
    void emptyVariablesMeanTheirDefaults() {
        assertEquals("memory", app.stateMode());
        assertTrue(app.functions().has("gateway") && app.functions().has("prober") && app.functions().has("console"));
        given().get("/q/health/ready").then().statusCode(200);
    }

    @Test
    void theDemoCatalogRoutesAChatRequest() {
        given().header("Authorization", "Bearer hr-demo-key").contentType("application/json")
                .body("{\"model\":\"kimi3\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}")
                .post("/v1/chat/completions")
                .then().statusCode(200).header("x-hedgerow-route", startsWith("kimi3-"))
                .body("choices[0].message.content", not(emptyString()));
    }
}
