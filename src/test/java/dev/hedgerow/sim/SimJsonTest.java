package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimJsonTest {

    @Test
    void modelScriptRoundTripsThroughJson() {
        ModelScript s = ModelScript.defaults().withLength(12).withSeed(5)
                .withLatency(ModelScript.Latency.of(40, 80).withJitter(0.1).withHeavyTail(0.05, 8)
                        .withTtftPer1kPromptTokens(30))
                .withCapabilities(ModelScript.Capabilities.DEFAULT.withImages(true).withOverlapChars(4)
                        .withContinuation(EnumSet.of(ModelScript.Continuation.PREFIX)))
                .withReasoning(new ModelScript.Reasoning(3, 50, 10))
                .withFaults(List.of(new ModelScript.FaultChance(0.1, Fault.rateLimited(2)),
                        new ModelScript.FaultChance(0.01, Fault.dropMidCodePoint(4))));
        String json = SimJson.write(s);
        assertTrue(json.contains("\"ttft_base_ms\":40"), json);
        assertTrue(json.contains("\"kind\":\"drop\""), json);
        assertEquals(s, SimJson.readScript(json));
    }

    @Test
    void paretoTailRoundTripsAndAnOmittedShapeIsAStepTail() {
        ModelScript pareto = ModelScript.defaults()
                .withLatency(ModelScript.Latency.of(100, 0).withParetoTail(0.05, 5, 1.2));
        String json = SimJson.write(pareto);
        assertTrue(json.contains("\"heavy_tail_shape\":1.2"), json);
        assertEquals(pareto, SimJson.readScript(json));
        ModelScript step = SimJson.readScript("{\"latency\":{\"ttft_base_ms\":100,\"heavy_tail_probability\":0.05,"
                + "\"heavy_tail_factor\":10}}");
        assertEquals(ModelScript.Latency.of(100, 0).withHeavyTail(0.05, 10), step.latency());
    }

    @Test
    void aNegativeHeavyTailShapeIsRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SimJson.readScript("{\"latency\":{\"heavy_tail_shape\":-1}}"));
        assertTrue(e.getMessage().contains("heavy_tail_shape"), e.getMessage());
    }

    @Test
    void missingPartsOfAScriptTakeDefaults() {
        ModelScript s = SimJson.readScript("{}");
        assertEquals(ModelScript.DEFAULT_LENGTH, s.length());
        assertEquals(ModelScript.Latency.INSTANT, s.latency());
        assertEquals(ModelScript.Capabilities.DEFAULT, s.capabilities());
    }

    @Test
    void everyFaultKindRoundTrips() {
        List<Fault> all = List.of(Fault.rateLimited(null), Fault.status(529), Fault.contextLengthExceeded(),
                Fault.reset(), Fault.noResponse(), Fault.dropAfter(3), new Fault.EmptyStream(true),
                new Fault.NoDone(), new Fault.EofBeforeFinish(2), new Fault.MalformedFrame(1),
                new Fault.ErrorEvent(2, "m", "c"), Fault.stallForever(5), Fault.rateLimitedMillis(1500, 2),
                Fault.rateLimitedUntil(Instant.parse("1999-12-31T23:59:59Z")));
        for (Fault f : all) {
            assertEquals(f, SimJson.readFault(SimJson.write(f)));
        }
        assertEquals(new Fault.Stall(2, 100), SimJson.readFault("{\"kind\":\"stall\",\"after_tokens\":2,\"ms\":100}"));
    }

    @Test
    void configReadsFromJson() {
        SimConfig c = SimJson.readConfig("{\"text_seed\":9,\"api_key\":\"k\",\"max_running\":4,"
                + "\"models\":{\"a\":{\"length\":5},\"b\":{}}}");
        assertEquals(9, c.textSeed());
        assertEquals("k", c.apiKey());
        assertEquals(4, c.maxRunning());
        assertEquals(5, c.models().get("a").length());
        assertEquals(2, c.models().size());
    }
}
