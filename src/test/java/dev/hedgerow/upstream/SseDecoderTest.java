package dev.hedgerow.upstream;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SseDecoderTest {
    private final List<SseEvent> events = new ArrayList<>();
    private final List<String> comments = new ArrayList<>();
    private final SseDecoder decoder = new SseDecoder(new SseDecoder.Listener() {
        @Override
        public void onEvent(SseEvent event) {
            events.add(event);
        }

        @Override
        public void onComment(String comment) {
            comments.add(comment);
        }
    }, 1024);

    private void feed(String s) {
        decoder.feed(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void decodesOneEventPerBlankLine() {
        feed("data: {\"a\":1}\n\ndata: [DONE]\n\n");
        assertEquals(2, events.size());
        assertEquals("{\"a\":1}", events.get(0).data());
        assertTrue(events.get(1).isDone());
    }

    @Test
    void joinsFramesSplitAcrossReadsAtEveryByte() {
        byte[] all = "data: hello\n\ndata: world\n\n".getBytes(StandardCharsets.UTF_8);
        for (byte b : all) {
            decoder.feed(new byte[]{b});
        }
        assertEquals(List.of("hello", "world"), events.stream().map(SseEvent::data).toList());
    }

    @Test
    void joinsMultiLineDataWithNewlines() {
        feed("data: line one\ndata: line two\n\n");
        assertEquals("line one\nline two", events.get(0).data());
    }

    @Test
    void acceptsCrLfAndLoneCrLineEnds() {
        feed("data: a\r\n\r\ndata: b\r\rdata: c\r");
        feed("\n\r\n");
        assertEquals(List.of("a", "b", "c"), events.stream().map(SseEvent::data).toList());
    }

    @Test
    void reportsCommentsAsKeepAlives() {
        feed(": keep-alive\n\ndata: x\n\n");
        assertEquals(List.of("keep-alive"), comments);
        assertEquals(1, events.size());
    }

    @Test
    void readsEventTypeAndId() {
        feed("event: error\nid: 7\ndata: boom\n\n");
        assertEquals("error", events.get(0).event());
        assertEquals("7", events.get(0).id());
    }

    @Test
    void decodesUtf8CharacterSplitAcrossReads() {
        byte[] all = "data: caf\u00e9 \ud83c\udf3f\n\n".getBytes(StandardCharsets.UTF_8);
        int cut = 10; // inside the 2-byte é or the 4-byte emoji depending on offset; try every split
        for (cut = 1; cut < all.length; cut++) {
            events.clear();
            SseDecoder d = new SseDecoder(events::add);
            d.feed(all, 0, cut);
            d.feed(all, cut, all.length - cut);
            assertEquals("caf\u00e9 \ud83c\udf3f", events.get(0).data(), "split at " + cut);
        }
    }

    @Test
    void dropsAnUnterminatedEventAtEnd() {
        feed("data: complete\n\ndata: cut off mid-fr");
        assertTrue(decoder.finish());
        assertEquals(1, events.size());
    }

    @Test
    void cleanEndHasNothingPending() {
        feed("data: x\n\n");
        assertFalse(decoder.finish());
    }

    @Test
    void ignoresEventsWithoutData() {
        feed("event: ping\n\nid: 3\n\n");
        assertTrue(events.isEmpty());
    }

    @Test
    void refusesAnOversizeEvent() {
        String big = "data: " + "x".repeat(2000) + "\n\n";
        assertThrows(SseDecoder.OversizeException.class, () -> feed(big));
    }

    /**
     * The event-stream format lets a stream begin with a UTF-8 byte order mark, which the parser must skip (WHATWG
     * HTML, "Parsing an event stream": one leading U+FEFF is ignored). Today the BOM stays in the first line's field
     * name ("\uFEFFdata"), an unknown field, so the stream's first event is silently dropped.
     */
    @Test
    void skipsALeadingByteOrderMark() {
        decoder.feed(new byte[] {(byte) 0xEF, (byte) 0xBB});
        decoder.feed(new byte[] {(byte) 0xBF});
        feed("data: first\n\ndata: second\n\n");
        assertEquals(List.of("first", "second"), events.stream().map(SseEvent::data).toList());
    }

    /** Only the stream's leading byte order mark is skipped: one later in the stream stays in its line (spec). */
    @Test
    void skipsTheByteOrderMarkOnlyAtTheStart() {
        feed("\uFEFFdata: first\n\n\uFEFFdata: lost\n\ndata: third\n\n");
        assertEquals(List.of("first", "third"), events.stream().map(SseEvent::data).toList());
    }
}
