package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static dev.hedgerow.testsupport.Eventually.eventually;

/** The hostile-upstream faults: HTML with 200, a giant SSE line, an endless stream, a slow drip. */
class SimHostileFaultTest extends SimFixture {
    static final String PROMPT = "Write about the river stones";

    @Override
    SimConfig config() {
        return SimConfig.of(7).withModel("m",
                ModelScript.defaults().withLength(10).withLatency(ModelScript.Latency.of(5, 1000)));
    }
    @Test
    void html200IsAnHtmlPageWithStatus200OnAStream() {
        sim.enqueue("m", new Fault.Html200(0));
        SimHttp.Raw r = http.stream(SimHttp.chat("m", PROMPT, true));
        assertEquals(200, r.status());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/html"));
        assertTrue(r.text().contains("<html>"), r.text());
    }

    @Test
    void html200AnswersANonStreamingRequestToo() {
        sim.enqueue("m", new Fault.Html200(0));
        HttpResponse<String> r = http.post("/v1/chat/completions", SimHttp.chat("m", PROMPT, false));
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/html"));
    }

    @Test
    void aGiantLineIsOneWellFormedFrameAndTheStreamGoesOn() {
        sim.enqueue("m", new Fault.GiantLine(2, 100_000));
        SimHttp.Raw r = http.stream(SimHttp.chat("m", PROMPT, true));
        List<JsonNode> chunks = r.chunks();
        assertTrue(chunks.stream().anyMatch(c -> c.path("choices").path(0).path("delta").path("content").asText()
                .length() == 100_000));
        assertEquals("[DONE]", r.data().get(r.data().size() - 1));
    }

    @Test
    void anEndlessStreamKeepsSendingContentAndNeverFinishes() throws InterruptedException {
        sim.enqueue("m", new Fault.Endless(2));
        SimHttp.Raw r = http.stream(SimHttp.chat("m", PROMPT, true), Duration.ofMillis(600));
        List<JsonNode> chunks = r.chunks();
        assertTrue(chunks.size() > 40, "only " + chunks.size() + " chunks");
        assertFalse(r.data().contains("[DONE]"));
        assertTrue(chunks.stream().allMatch(c -> c.path("choices").path(0).path("finish_reason").isNull()));
        eventually(() -> sim.stats("m").cancelled() == 1, "the hang-up to count as a cancel");
    }

    @Test
    void aSlowDripSendsBytesButNeverCompletesAnEvent() throws InterruptedException {
        sim.enqueue("m", new Fault.SlowDrip(2, 20));
        SimHttp.Raw r = http.stream(SimHttp.chat("m", PROMPT, true), Duration.ofMillis(500));
        // the role chunk and two tokens, then a frame that never ends
        assertEquals(3, r.data().size(), r.text());
        String tail = r.text().substring(r.text().lastIndexOf("\n\n") + 2);
        assertTrue(tail.startsWith("data: ") && tail.endsWith("aaaa"), tail);
        eventually(() -> sim.stats("m").cancelled() == 1, "the hang-up to count as a cancel");
    }

    @Test
    void theNewFaultsReadFromControlJson() {
        assertEquals(new Fault.Html200(5), SimJson.read("{\"kind\":\"html_200\",\"delay_ms\":5}", Fault.class));
        assertEquals(new Fault.HtmlError(403), SimJson.read("{\"kind\":\"html_error\",\"status\":403}", Fault.class));
        assertEquals(new Fault.GiantLine(1, 10), SimJson.read("{\"kind\":\"giant_line\",\"after_tokens\":1,"
                + "\"bytes\":10}", Fault.class));
        assertEquals(new Fault.Endless(3), SimJson.read("{\"kind\":\"endless\",\"after_tokens\":3}", Fault.class));
        assertEquals(new Fault.SlowDrip(0, 50), SimJson.read("{\"kind\":\"slow_drip\",\"after_tokens\":0,"
                + "\"every_ms\":50}", Fault.class));
    }
}
