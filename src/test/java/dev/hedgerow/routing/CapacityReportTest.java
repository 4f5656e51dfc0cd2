package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CapacityReportTest {

    @Test
    void headroomEndsWhenTheQueueReachesItsBound() {
        assertTrue(new CapacityReport(3, 4, 0.5, 0).hasHeadroom());
        assertFalse(new CapacityReport(4, 4, 0.5, 0).hasHeadroom());
        assertEquals("queue full (4 waiting, bound 4)", new CapacityReport(4, 4, 0.5, 0).shortage());
    }

    @Test
    void headroomEndsAtHighMemoryPressure() {
        assertTrue(new CapacityReport(0, 4, 0.94, 0).hasHeadroom());
        assertFalse(new CapacityReport(0, 4, CapacityReport.MAX_PRESSURE, 0).hasHeadroom());
        assertNull(new CapacityReport(0, 4, 0.1, 0).shortage());
    }

    @Test
    void aRouteReportedUnhealthyHasNoHeadroomWhateverItsQueue() {
        CapacityReport r = new CapacityReport(0, 4, 0.1, 0, false);
        assertFalse(r.hasHeadroom());
        assertEquals("reported unhealthy", r.shortage());
    }

    @Test
    void encodesAndDecodesExactly() {
        CapacityReport r = new CapacityReport(2, 8, 0.25, 61.5);
        assertEquals(Optional.of(r), CapacityReport.decode(r.encode()));
        CapacityReport sick = new CapacityReport(2, 8, 0.25, 61.5, false);
        assertEquals(Optional.of(sick), CapacityReport.decode(sick.encode()));
        // a blob written before reports carried health is a healthy route's
        assertEquals(Optional.of(r), CapacityReport.decode("{\"queue_depth\":2,\"max_queue\":8,"
                + "\"memory_pressure\":0.25,\"tokens_per_second\":61.5}"));
    }

    @Test
    void damagedOrOutOfRangeBlobsDecodeToNothing() {
        assertEquals(Optional.empty(), CapacityReport.decode(null));
        assertEquals(Optional.empty(), CapacityReport.decode("{not json"));
        assertEquals(Optional.empty(), CapacityReport.decode("{\"queue_depth\":-1}"));
        assertEquals(Optional.empty(), CapacityReport.decode("{\"memory_pressure\":3}"));
    }

    @Test
    void rejectsImpossibleValues() {
        assertThrows(IllegalArgumentException.class, () -> new CapacityReport(0, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new CapacityReport(0, 1, Double.NaN, 0));
        assertThrows(IllegalArgumentException.class, () -> new CapacityReport(0, 1, 0, Double.POSITIVE_INFINITY));
    }
}
