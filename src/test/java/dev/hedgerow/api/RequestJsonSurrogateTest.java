package dev.hedgerow.api;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Where an escaped unpaired surrogate is, named in the 400's {@code param}: the path is built once one is found (it
 * was built for every node on the way, at the cost of the path's length per node). The end-to-end case over HTTP is
 * HostileInputTest's.
 */
class RequestJsonSurrogateTest {
    static String paramOf(String json) {
        RequestException e = assertThrows(RequestException.class,
                () -> RequestJson.parse(json.getBytes(StandardCharsets.UTF_8)));
        assertEquals("invalid_unicode", e.error().code());
        return e.error().param();
    }

    @Test
    void thePathNamesFieldsAndIndicesDownToTheString() {
        assertEquals("a[1].b", paramOf("{\"a\":[{\"b\":\"ok\"},{\"b\":\"\\ud800\"}]}"));
        assertEquals("[0]", paramOf("[\"\\udc00\"]"));
        assertEquals("x.y[0][2]", paramOf("{\"x\":{\"y\":[[0,1,\"\\ud83d\"]]}}"));
    }

    /** The same walk finds a field name by a rule (an admin edit's over-long names), showing its first 40 characters. */
    @Test
    void aFieldNameFoundByARuleIsNamedWithItsPath() throws Exception {
        String name = "k".repeat(200);
        com.fasterxml.jackson.databind.JsonNode n = Json.MAPPER.readTree("{\"members\":[{\"route\":\"a\"},{\"" + name
                + "\":1}]}");
        assertEquals("members[1]." + "k".repeat(40) + "\u2026", RequestJson.firstPath(n, k -> k.length() > 128, t -> false));
        assertEquals(null, RequestJson.firstPath(n, k -> false, t -> false));
    }
}
