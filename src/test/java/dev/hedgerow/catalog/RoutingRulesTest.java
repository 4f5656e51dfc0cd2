package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The one rule for where a request names its alias, shared by the gateway and /admin/explain. */
class RoutingRulesTest {
    static final RoutingRules WITH_HEADER = new RoutingRules("X-Model-Alias", true);

    @Test
    void thePathWinsOverTheHeader() {
        assertEquals("solo", WITH_HEADER.routedAlias("solo", name -> "duo"));
    }

    @Test
    void theHeaderIsReadByItsConfiguredNameAndTrimmed() {
        Map<String, String> headers = Map.of("X-Model-Alias", "  duo ");
        assertEquals("duo", WITH_HEADER.routedAlias(null, headers::get));
    }

    @Test
    void aBlankOrAbsentHeaderLeavesTheBodysModel() {
        assertNull(WITH_HEADER.routedAlias(null, name -> "   "));
        assertNull(WITH_HEADER.routedAlias(null, name -> null));
    }

    @Test
    void withoutAnAliasHeaderNoHeaderIsRead() {
        assertNull(RoutingRules.defaults().routedAlias(null, name -> {
            throw new AssertionError("read header " + name);
        }));
    }
}
