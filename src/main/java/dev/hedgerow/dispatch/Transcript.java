package dev.hedgerow.dispatch;

/**
 * What the client has received so far: the exact content and reasoning text, whether a tool call is in
 * progress, and the finish reason. Resume continues from exactly this. Confined to its dispatch (guarded by it).
 */
final class Transcript {
    final StringBuilder content = new StringBuilder();
    final StringBuilder reasoning = new StringBuilder();
    boolean toolCallStarted;
    boolean roleSent;
    String finishReason;
    /**
     * Content and reasoning deltas delivered: the tokens generated so far (a stream sends one token a delta; the
     * pieces an inexact resume held while trimming its overlap count one each, though they go out as one).
     */
    int deltas;

    boolean isEmpty() {
        return content.length() == 0 && reasoning.length() == 0 && !toolCallStarted;
    }

    /** True while the stream is still in its reasoning phase (no visible content yet). */
    boolean inReasoning() {
        return content.length() == 0 && reasoning.length() > 0;
    }
}
