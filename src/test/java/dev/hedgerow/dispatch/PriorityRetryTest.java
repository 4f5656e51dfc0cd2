package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Kong's priority retry decisions, one rule per test. */
class PriorityRetryTest {
    static final GroupSettings PRIORITY = GroupSettings.defaults().withStrategy(Strategy.PRIORITY);
    static final GroupSettings THREE_FAILS = new GroupSettings(Strategy.PRIORITY, true, false,
            new GroupSettings.Breaker(3, Duration.ofSeconds(10)), GroupSettings.Retry.defaults(),
            GroupSettings.Timeouts.defaults(), GroupSettings.Balancer.defaults(), GroupSettings.Slo.defaults(),
            GroupSettings.DEFAULT_HEAD_HOLD);

    static Candidate cand(String id, int priority, long fails) {
        Route r = new Route(id, "g", "p", "m", 1, priority, 0, Set.of(), Set.of(), Route.Price.FREE, null, List.of());
        RouteSnapshot s = new RouteSnapshot("o/" + id, false, 0, fails, false, 0, 0, UsageSample.ZERO, Map.of());
        return new Candidate("o/" + id, r, null, s, false, TtftEstimate.UNKNOWN);
    }

    final Candidate a = cand("a", 1, 0);
    final Candidate b = cand("b", 1, 0);
    final Candidate c = cand("c", 2, 0);

    @Test
    void anUntriedMemberOfTheTopTierComesBeforeTheNextTier() {
        PriorityRetry.Decision d = PriorityRetry.afterFailure(THREE_FAILS, List.of(a, b, c), Set.of("o/a"), a, 1,
                id -> 1, 500, 0);
        assertEquals(new PriorityRetry.Decision.Stay(b, Duration.ZERO), d);
    }

    @Test
    void theOnlyTopTierTargetIsRetriedOnceWhileItsBreakerIsClosed() {
        assertEquals(new PriorityRetry.Decision.Stay(a, Duration.ZERO), PriorityRetry.afterFailure(THREE_FAILS,
                List.of(a, c), Set.of("o/a"), a, 1, id -> 1, 500, 0));
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(THREE_FAILS, List.of(a, c), Set.of("o/a"),
                a, 2, id -> 2, 500, 0));
    }

    @Test
    void aFailureThatOpensTheBreakerFallsBackATier() {
        Candidate nearLimit = cand("a", 1, 2);
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(THREE_FAILS, List.of(nearLimit, c),
                Set.of("o/a"), nearLimit, 1, id -> 1, 500, 0));
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(PRIORITY, List.of(a, c), Set.of("o/a"), a,
                1, id -> 1, 500, 0), "max_fails 1: the first failure opens it");
    }

    @Test
    void aShortRetryAfterIsWaitedForToTheMillisecondAndALongOneIsNot() {
        assertEquals(new PriorityRetry.Decision.Stay(a, Duration.ofSeconds(2)), PriorityRetry.afterFailure(
                THREE_FAILS, List.of(a, c), Set.of("o/a"), a, 1, id -> 1, 429, 2000));
        assertEquals(new PriorityRetry.Decision.Stay(a, Duration.ofMillis(2999)), PriorityRetry.afterFailure(
                THREE_FAILS, List.of(a, c), Set.of("o/a"), a, 1, id -> 1, 429, 2999));
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(THREE_FAILS, List.of(a, c), Set.of("o/a"),
                a, 1, id -> 1, 429, 3001), "over max_retry_after_wait (3 s)");
        // an overloaded provider's wait (503, 529) holds the target too: waited for alike, never retried at once
        assertEquals(new PriorityRetry.Decision.Stay(a, Duration.ofMillis(1500)), PriorityRetry.afterFailure(
                THREE_FAILS, List.of(a, c), Set.of("o/a"), a, 1, id -> 1, 503, 1500));
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(THREE_FAILS, List.of(a, c), Set.of("o/a"),
                a, 1, id -> 1, 529, 60_000));
    }

    @Test
    void aLowerTierFailureAndOtherStrategiesAreOrdinary() {
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(THREE_FAILS, List.of(a, c),
                Set.of("o/a", "o/c"), c, 1, id -> 1, 500, 0));
        GroupSettings weighted = THREE_FAILS.withStrategy(Strategy.WEIGHTED);
        assertEquals(PriorityRetry.ORDINARY, PriorityRetry.afterFailure(weighted, List.of(a, c), Set.of("o/a"), a,
                1, id -> 1, 500, 0));
    }
}
