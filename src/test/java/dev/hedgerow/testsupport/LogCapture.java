package dev.hedgerow.testsupport;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Captures every log record of the process (System.Logger ends in java.util.logging) at every level while open,
 * formatted with its parameters and stack trace, so tests can assert what never reaches a log.
 */
public final class LogCapture extends Handler implements AutoCloseable {
    private final List<String> lines = new ArrayList<>();
    private final Logger root = Logger.getLogger("");
    private final Logger hedgerow = Logger.getLogger("dev.hedgerow");
    private final Level rootLevel = root.getLevel();
    private final Level hedgerowLevel = hedgerow.getLevel();
    private final SimpleFormatter format = new SimpleFormatter();

    public LogCapture() {
        setLevel(Level.ALL);
        hedgerow.setLevel(Level.ALL);
        root.addHandler(this);
    }

    @Override
    public synchronized void publish(LogRecord r) {
        StringBuilder sb = new StringBuilder(r.getLoggerName() + " " + r.getLevel() + " " + format.formatMessage(r));
        if (r.getParameters() != null) {
            for (Object p : r.getParameters()) {
                sb.append(" | ").append(p);
            }
        }
        if (r.getThrown() != null) {
            StringWriter w = new StringWriter();
            r.getThrown().printStackTrace(new PrintWriter(w));
            sb.append('\n').append(w);
        }
        lines.add(sb.toString());
    }

    public synchronized List<String> lines() {
        return List.copyOf(lines);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        root.removeHandler(this);
        hedgerow.setLevel(hedgerowLevel);
        root.setLevel(rootLevel);
    }
}
