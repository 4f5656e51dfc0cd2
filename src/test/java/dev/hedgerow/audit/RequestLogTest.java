package dev.hedgerow.audit;

import dev.hedgerow.testsupport.AtOnce;
import dev.hedgerow.testsupport.Eventually;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request log's writer thread: every line written once, each adder's lines in order, built and written off the
 * adding thread, nothing lost at flush or close. No timing is asserted: a batch far longer than the test keeps the
 * writer gathering until flush or close makes it write.
 */
class RequestLogTest {
    private static final long HOUR = TimeUnit.HOURS.toNanos(1);

    /** What the sink received, with the thread that wrote and the thread that built each line. */
    private static final class Sink {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Map<String, String> writtenBy = new ConcurrentHashMap<>();
        final Map<String, String> builtBy = new ConcurrentHashMap<>();

        void accept(String line) {
            lines.add(line);
            writtenBy.put(line, Thread.currentThread().getName());
        }

        Supplier<String> line(String text) {
            return () -> {
                builtBy.put(text, Thread.currentThread().getName());
                return text;
            };
        }
    }

    @Test
    void linesFromManyThreadsAreAllWrittenOnceInEachAddersOrderByTheWriterThread() throws Exception {
        Sink sink = new Sink();
        RequestLog log = new RequestLog(sink::accept, TimeUnit.MILLISECONDS.toNanos(1));
        int threads = 4;
        int each = 2_000;
        try {
            assertEquals(0, AtOnce.failures(threads, each, i -> {
                log.add(sink.line("line " + i));
                return true;
            }));
        } finally {
            log.close();
        }
        assertEquals(threads * each, sink.lines.size());
        assertEquals(threads * each, sink.lines.stream().distinct().count(), "no line twice");
        for (int t = 0; t < threads; t++) { // thread t added lines t*each .. t*each+each-1, in that order
            List<Integer> mine = new ArrayList<>();
            for (String l : sink.lines) {
                int n = Integer.parseInt(l.substring(5));
                if (n / each == t) {
                    mine.add(n);
                }
            }
            for (int k = 1; k < mine.size(); k++) {
                assertTrue(mine.get(k - 1) < mine.get(k), "adder " + t + " out of order at " + k);
            }
        }
        assertTrue(sink.writtenBy.values().stream().allMatch("hedgerow-request-log"::equals), "written by the writer");
        assertTrue(sink.builtBy.values().stream().allMatch("hedgerow-request-log"::equals), "built by the writer");
    }

    @Test
    void aLineIsWrittenWithoutFlushEvenAfterTheWriterWentIdle() {
        Sink sink = new Sink();
        try (RequestLog log = new RequestLog(sink::accept, TimeUnit.MILLISECONDS.toNanos(1))) {
            for (int i = 0; i < 20; i++) { // each add after the last line was written: the writer waits for it
                log.add(sink.line("line " + i));
                int written = i + 1;
                Eventually.eventually(() -> sink.lines.size() == written, "line " + i + " written without a flush");
            }
        }
    }

    @Test
    void aGatheringBatchIsWrittenAtOnceByFlushAndByClose() {
        Sink sink = new Sink();
        RequestLog log = new RequestLog(sink::accept, HOUR);
        log.add(sink.line("a"));
        log.add(sink.line("b"));
        log.flush();
        assertEquals(List.of("a", "b"), sink.lines);
        log.add(sink.line("c"));
        log.close();
        assertEquals(List.of("a", "b", "c"), sink.lines, "close writes what waits");
        log.add(sink.line("d"));
        assertEquals(List.of("a", "b", "c", "d"), sink.lines, "after close the adder writes its own line");
        assertEquals(Thread.currentThread().getName(), sink.writtenBy.get("d"));
    }

    @Test
    void aLineThatFailsToBuildIsSkippedAndTheWriterGoesOn() {
        Sink sink = new Sink();
        RequestLog log = new RequestLog(sink::accept, HOUR);
        log.add(() -> {
            throw new IllegalStateException("broken line");
        });
        log.add(sink.line("after"));
        log.close();
        assertEquals(List.of("after"), sink.lines);
    }

    @Test
    void theBatchMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new RequestLog(line -> { }, 0));
    }
}
