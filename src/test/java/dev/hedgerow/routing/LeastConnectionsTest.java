package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LeastConnectionsTest {
    private static final List<String> MEMBERS = List.of("a", "b", "c");

    @Test
    void fewestInflightPerWeightComesFirst() {
        Map<String, Integer> inflight = Map.of("a", 5, "b", 1, "c", 3);
        assertEquals(List.of("b", "c", "a"), LeastConnections.order(MEMBERS, inflight::get, m -> 1, 0));
    }

    @Test
    void weightScalesCapacity() {
        // a: (3+1)/4 = 1, b: (1+1)/1 = 2, c: (0+1)/1 = 1 → a and c tie; their 4:1 rotation puts a first at cursor 0
        Map<String, Integer> inflight = Map.of("a", 3, "b", 1, "c", 0);
        Map<String, Integer> weight = Map.of("a", 4, "b", 1, "c", 1);
        assertEquals(List.of("a", "c", "b"), LeastConnections.order(MEMBERS, inflight::get, weight::get, 0));
    }

    @Test
    void tiesRotateWithTheCursor() {
        assertEquals(List.of("a", "b", "c"), LeastConnections.order(MEMBERS, m -> 0, m -> 1, 0));
        assertEquals(List.of("b", "c", "a"), LeastConnections.order(MEMBERS, m -> 0, m -> 1, 1));
        assertEquals(List.of("c", "a", "b"), LeastConnections.order(MEMBERS, m -> 0, m -> 1, 5));
        assertEquals(List.of("c", "a", "b"), LeastConnections.order(MEMBERS, m -> 0, m -> 1, -1));
    }

    @Test
    void zeroWeightMembersComeLast() {
        Map<String, Integer> weight = Map.of("a", 0, "b", 1, "c", 1);
        Map<String, Integer> inflight = Map.of("a", 0, "b", 9, "c", 4);
        assertEquals(List.of("c", "b", "a"), LeastConnections.order(MEMBERS, inflight::get, weight::get, 0));
    }

    /** How often each member comes first over the cursors {@code 0 .. n-1}. */
    static Map<String, Integer> firsts(List<String> members, Map<String, Integer> inflight,
                                       Map<String, Integer> weight, int n) {
        Map<String, Integer> out = new HashMap<>();
        for (long c = 0; c < n; c++) {
            out.merge(LeastConnections.order(members, inflight::get, weight::get, c).get(0), 1, Integer::sum);
        }
        return out;
    }

    @Test
    void aWeightZeroStandbysTurnsGoToNoOneInParticular() {
        // the hunt's group: 100/100/0, nothing in flight. A rotation over all three positions gave the standby's
        // turn to the member after it (wrapping to p1): 20/10
        List<String> members = List.of("p1", "p2", "p3");
        Map<String, Integer> idle = Map.of("p1", 0, "p2", 0, "p3", 0);
        assertEquals(Map.of("p1", 15, "p2", 15), firsts(members, idle, Map.of("p1", 100, "p2", 100, "p3", 0), 30));
        // wherever the standby stands
        assertEquals(Map.of("p1", 15, "p3", 15), firsts(members, idle, Map.of("p1", 100, "p2", 0, "p3", 100), 30));
    }

    @Test
    void tiedMembersShareByWeight() {
        // a: (2+1)/300 = b: (0+1)/100 = c: (0+1)/100: equal spare capacity per unit of weight, so new requests
        // go 3:1:1 (an even rotation gave 10/10/10)
        Map<String, Integer> inflight = Map.of("a", 2, "b", 0, "c", 0);
        assertEquals(Map.of("a", 30, "b", 10, "c", 10),
                firsts(MEMBERS, inflight, Map.of("a", 300, "b", 100, "c", 100), 50));
    }

    @Test
    void standbysRotateEvenlyAmongThemselves() {
        // when every member with a share is out, the standbys serve: fairly, not 3:1 by their place in the list
        Map<String, Integer> weight = Map.of("a", 1, "b", 1, "c", 0, "d", 0);
        Map<String, Integer> seconds = new HashMap<>();
        for (long c = 0; c < 20; c++) {
            List<String> order = LeastConnections.order(List.of("a", "b", "c", "d"), m -> 0, weight::get, c);
            assertEquals(Set.of("c", "d"), Set.copyOf(order.subList(2, 4)), order.toString());
            seconds.merge(order.get(2), 1, Integer::sum);
        }
        assertEquals(Map.of("c", 10, "d", 10), seconds);
    }
}
