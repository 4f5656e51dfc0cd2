package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

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
        // a: (3+1)/4 = 1, b: (1+1)/1 = 2, c: (0+1)/1 = 1 → a and c tie, rotation from cursor 0 puts a first
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
}
